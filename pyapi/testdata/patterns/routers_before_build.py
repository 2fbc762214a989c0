"""Routers configured before the network exists: commands run in r1 and
r2 before addLink and build(), static routes after start(). Every pair
answers, as in Mininet."""

from mininet.net import Mininet
from mininet.nodelib import LinuxBridge
from mininet.log import setLogLevel

setLogLevel('info')
net = Mininet(controller=None, switch=LinuxBridge)
r1 = net.addHost('r1', ip='10.0.1.1/24')
r2 = net.addHost('r2', ip='10.0.2.1/24')
for r in (r1, r2):
    r.cmd('sysctl -w net.ipv4.ip_forward=1')
h1 = net.addHost('h1', ip='10.0.1.2/24', defaultRoute='via 10.0.1.1')
h2 = net.addHost('h2', ip='10.0.2.2/24', defaultRoute='via 10.0.2.1')
net.addLink(h1, r1)
net.addLink(h2, r2)
net.addLink(r1, r2, params1={'ip': '10.0.12.1/24'},
            params2={'ip': '10.0.12.2/24'})
net.build()
net.start()
r1.cmd('ip route add 10.0.2.0/24 via 10.0.12.2')
r2.cmd('ip route add 10.0.1.0/24 via 10.0.12.1')
for r in (r1, r2):
    assert r.cmd('sysctl -n net.ipv4.ip_forward').strip() == '1', r
results = net.pingFull()
net.stop()
lost = [(s.name, d.name) for s, d, o in results if o[1] != o[0]]
assert not lost, lost
print('OK')
