"""Raw tc inside nodes: netem, tbf and htb on link interfaces, run by
hymn's emulator on any kernel. Prints one JSON object with what it saw;
pyapi's TestTCInNodes judges it."""

import json
import re

from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.topo import SingleSwitchTopo

out = {}


def rtts(text):
    return [float(x) for x in re.findall(r'time=([\d.]+) ms', text)]


net = Mininet(topo=SingleSwitchTopo(2), controller=None, switch=LinuxBridge)
net.start()
h1, h2 = net.hosts
s1 = net['s1']
ping = 'ping -c 100 -i 0.02 %s' % h2.IP()
out['base'] = rtts(h1.cmd(ping))
out['add'] = h1.cmd('tc qdisc add dev h1-eth0 root netem delay 100ms; '
                    'echo rc=$?')
out['delayed'] = rtts(h1.cmd(ping))
out['show'] = h1.cmd('tc -s qdisc show dev h1-eth0')
out['showAll'] = h1.cmd('tc qdisc show')
out['again'] = h1.cmd('tc qdisc add dev h1-eth0 root netem delay 1ms; '
                      'echo rc=$?')
out['unknown'] = h1.cmd('tc qdisc change dev h1-eth0 root netem delay 1ms '
                        'frobnicate 3; echo rc=$?')
out['dup'] = h1.cmd('tc qdisc replace dev h1-eth0 root netem duplicate 50%; '
                    'echo rc=$?')
out['dupPing'] = h1.cmd('ping -c 100 -i 0.02 -q %s' % h2.IP())
out['del'] = h1.cmd('tc qdisc del dev h1-eth0 root; echo rc=$?; '
                    'tc qdisc show dev h1-eth0')
out['after'] = rtts(h1.cmd('ping -c 20 -i 0.02 %s' % h2.IP()))
# A switch port: a tbf under a netem root, and a popen'ed tc.
s1.cmd('tc qdisc add dev s1-eth2 root handle 1: netem delay 10ms')
s1.cmd('tc qdisc add dev s1-eth2 parent 1:1 handle 10: tbf rate 1mbit '
       'burst 1600 limit 3000')
p = s1.popen('tc qdisc show dev s1-eth2')
out['switch'] = p.communicate()[0].decode()
out['lo'] = h1.cmd('tc qdisc show dev lo; echo rc=$?')
net.stop()
print(json.dumps(out))
