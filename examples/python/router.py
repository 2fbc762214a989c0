#!/usr/bin/env python3
"""A router between three subnets, as Mininet's linuxrouter.py builds one
(a Node subclass whose config() turns IP forwarding on), written anew.

Run: sudo hymn python examples/python/router.py
"""

import sys

from mininet.net import Mininet
from mininet.node import Node, LinuxBridge
from mininet.topo import Topo
from mininet.log import setLogLevel


class Router(Node):
    "A node that forwards IPv4 (its config runs where Mininet calls it)."

    def config(self, **params):
        super(Router, self).config(**params)
        self.cmd('sysctl -w net.ipv4.ip_forward=1')

    def terminate(self):
        super(Router, self).terminate()


class ThreeNets(Topo):
    def build(self):
        r0 = self.addNode('r0', cls=Router, ip='192.168.1.1/24')
        for i, net in enumerate(('192.168.1', '172.16.0', '10.0.0')):
            s = self.addSwitch('s%d' % (i + 1))
            self.addLink(s, r0, intfName2='r0-eth%d' % i,
                         params2={'ip': '%s.1/24' % net})
            self.addLink(self.addHost('h%d' % (i + 1), ip='%s.100/24' % net,
                                      defaultRoute='via %s.1' % net), s)


def main():
    setLogLevel('info')
    net = Mininet(topo=ThreeNets(), switch=LinuxBridge, controller=None)
    net.start()
    print(net['r0'].cmd('ip route'))
    loss = net.pingAll()
    fwd = net['r0'].cmd('sysctl -n net.ipv4.ip_forward').strip()
    net.stop()
    ok = loss == 0 and fwd == '1'
    print('OK' if ok else 'FAIL')
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
