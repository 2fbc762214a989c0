"""Hosts addressed only by their links: addHost(ip=None), the addresses
given to addLink's params1/params2, or set with setIP after the build.
A node's IP() is its default interface's address, and pingAll pings
every host there."""

from mininet.net import Mininet
from mininet.node import Node
from mininet.nodelib import LinuxBridge
from mininet.log import setLogLevel


class Router(Node):
    def config(self, **params):
        r = super(Router, self).config(**params)
        self.cmd('sysctl -w net.ipv4.ip_forward=1')
        return r


setLogLevel('info')
net = Mininet(controller=None, switch=LinuxBridge)
r0 = net.addHost('r0', cls=Router, ip=None)
h1 = net.addHost('h1', ip=None, defaultRoute='via 10.0.1.1')
h2 = net.addHost('h2', ip=None, defaultRoute='via 10.0.2.1')
h3 = net.addHost('h3', ip=None)
net.addLink(h1, r0, params1={'ip': '10.0.1.2/24'},
            params2={'ip': '10.0.1.1/24'})
net.addLink(h2, r0, params1={'ip': '10.0.2.2/24'},
            params2={'ip': '10.0.2.1/24'})
net.addLink(h3, r0)  # addressed after the build
net.start()
r0.setIP('10.0.3.1/24', intf='r0-eth2')
h3.setIP('10.0.3.2/24')
h3.cmd('ip route add default via 10.0.3.1')
got = [(n.name, n.IP()) for n in (r0, h1, h2, h3)]
want = [('r0', '10.0.1.1'), ('h1', '10.0.1.2'), ('h2', '10.0.2.2'),
        ('h3', '10.0.3.2')]
assert got == want, got
loss = net.pingAll()
net.stop()
assert loss == 0, loss
print('OK')
