"""LinearTopo(N) with Linux bridges and no controller: build, start, ping
the ends, stop. The same file runs under real Mininet (python3
linear100.py) and under hymn (hymn python linear100.py); it prints one
line of timings for bench/python.sh to read."""
import sys
import time

from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import LinearTopo
from mininet.log import setLogLevel

n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
setLogLevel('warning')
t0 = time.time()
net = Mininet(topo=LinearTopo(n), switch=LinuxBridge, controller=None)
net.start()
first, last = net.hosts[0], net.hosts[-1]
out = first.cmd('ping -c1 -W5', last.IP())
t1 = time.time()
net.stop()
t2 = time.time()
ok = ' 1 received' in out
print('linear%d start+ping %.3f stop %.3f total %.3f ping %s' %
      (n, t1 - t0, t2 - t1, t2 - t0, 'ok' if ok else 'FAILED'))
sys.exit(0 if ok else 1)
