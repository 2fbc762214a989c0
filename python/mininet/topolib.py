"""mininet.topolib for hymn: TreeTopo, TorusTopo and TreeNet."""

from mininet.topo import Topo


class TreeTopo(Topo):
    "A tree of switches with hosts as leaves, numbered in pre-order."

    def build(self, depth=1, fanout=2):
        self.hostNum = 1
        self.switchNum = 1
        self.addTree(depth, fanout)

    def addTree(self, depth, fanout):
        isSwitch = depth > 0
        if isSwitch:
            node = self.addSwitch('s%s' % self.switchNum)
            self.switchNum += 1
            for _ in range(fanout):
                child = self.addTree(depth - 1, fanout)
                self.addLink(node, child)
        else:
            node = self.addHost('h%s' % self.hostNum)
            self.hostNum += 1
        return node


def TreeNet(depth=1, fanout=2, **kwargs):
    "A Mininet of a TreeTopo."
    from mininet.net import Mininet
    topo = TreeTopo(depth, fanout)
    return Mininet(topo, **kwargs)


class TorusTopo(Topo):
    """An x by y torus of switches with n hosts each (its loops need STP:
    use LinuxBridge with stp=True, or OVSSwitch)."""

    def build(self, x, y, n=1):
        if x < 3 or y < 3:
            raise Exception('Please use 3x3 or greater for compatibility '
                            'with 2.1')
        if n == 1:
            genHostName = lambda loc, k: 'h%s' % loc
        else:
            genHostName = lambda loc, k: 'h%sx%d' % (loc, k)
        hosts, switches, dpid = {}, {}, 0
        for i in range(0, x):
            for j in range(0, y):
                loc = '%dx%d' % (i + 1, j + 1)
                dpid = (i + 1) * 256 + (j + 1)
                switch = switches[i, j] = self.addSwitch(
                    's' + loc, dpid='%x' % dpid)
                for k in range(0, n):
                    host = hosts[i, j, k] = self.addHost(
                        genHostName(loc, k + 1))
                    self.addLink(host, switch)
        for i in range(0, x):
            for j in range(0, y):
                sw1 = switches[i, j]
                sw2 = switches[i, (j + 1) % y]
                sw3 = switches[(i + 1) % x, j]
                self.addLink(sw1, sw2)
                self.addLink(sw1, sw3)
