#!/usr/bin/env python3
"""popen and pmonitor: a ping from every host at once, output watched
line by line, each a real subprocess.Popen in its node.

Run: sudo hymn python examples/python/popen_pmonitor.py
"""

import signal
import sys

from mininet.net import Mininet
from mininet.topo import SingleSwitchTopo
from mininet.node import LinuxBridge
from mininet.util import pmonitor
from mininet.log import setLogLevel


def main():
    setLogLevel('info')
    net = Mininet(topo=SingleSwitchTopo(4), switch=LinuxBridge,
                  controller=None)
    net.start()
    hosts = net.hosts
    last = hosts[-1]
    popens = {h: h.popen('ping -c3 -i0.2 %s' % last.IP())
              for h in hosts[:-1]}
    replies = {}
    for host, line in pmonitor(dict(popens)):
        if host:
            print('<%s>: %s' % (host.name, line.strip()))
            if 'bytes from' in line:
                replies[host.name] = replies.get(host.name, 0) + 1
    codes = [p.wait() for p in popens.values()]
    # Signals reach a popen()'d process in its node.
    sleeper = hosts[0].popen('sleep 30')
    sleeper.send_signal(signal.SIGINT)
    sig = sleeper.wait(timeout=5)
    net.stop()
    ok = (codes == [0, 0, 0] and all(replies.get(h.name) == 3
                                     for h in hosts[:-1])
          and sig == -signal.SIGINT)
    print('OK' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
