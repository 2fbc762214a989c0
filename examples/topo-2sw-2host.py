"""Two switches, two hosts: h1 - s3 - s4 - h2.

The shape of Mininet's canonical custom topology, for

    hymn --custom examples/topo-2sw-2host.py --topo mytopo --test pingall

It runs unchanged under Mininet (mn --custom ...) and under hymn, which
executes it with python3 against its own mininet package.
"""

from mininet.topo import Topo


class MyTopo(Topo):
    "A line: host, switch, switch, host."

    def build(self):
        left_host = self.addHost('h1')
        right_host = self.addHost('h2')
        left_switch = self.addSwitch('s3')
        right_switch = self.addSwitch('s4')

        self.addLink(left_host, left_switch)
        self.addLink(left_switch, right_switch)
        self.addLink(right_switch, right_host)


topos = {'mytopo': (lambda: MyTopo())}
