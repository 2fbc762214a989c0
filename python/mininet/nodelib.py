"""mininet.nodelib for hymn: LinuxBridge, NAT, and CIMininet's
VMLinuxBridge."""

from mininet.node import Node, Switch, LinuxBridge, Host
from mininet.log import info, warn


class NAT(Node):
    """Mininet's NAT node. Made by net.addNAT(), it is hymn's NAT: linked
    to a switch and, by a second interface, to the machine's namespace,
    where it masquerades the hosts' traffic. Placed in a topology as a node
    of its own (natnet.py: addNode('nat1', cls=NAT, subnet=...)), it is a
    router that forwards and masquerades what its subnet sends elsewhere,
    with Mininet's iptables rules, in its own namespace."""

    kind = 'router'

    def __init__(self, name, subnet='10.0/8', localIntf=None, flush=False,
                 hymnRootNAT=False, **params):
        Node.__init__(self, name, **params)
        self.subnet = subnet
        self.localIntf = localIntf
        self.flush = flush
        self.rootNAT = hymnRootNAT

    def hymnParams(self):
        out = Node.hymnParams(self)
        for k in ('subnet', 'localIntf', 'flush', 'inetIntf',
                  'hymnRootNAT'):
            out.pop(k, None)
        if self.rootNAT:
            out['nat'] = '1'
        return out

    def config(self, **params):
        r = Node.config(self, **params)
        if not self.rootNAT:
            self.masquerade()
        return r

    def masquerade(self):
        """Forward the local subnet's traffic and masquerade what leaves
        it, dropping what enters the local side for the subnet itself."""
        local = self.localIntf or self.defaultIntf()
        if self.flush:
            for line in ('sysctl -q net.ipv4.ip_forward=0', 'iptables -F',
                         'iptables -t nat -F', 'iptables -P INPUT ACCEPT',
                         'iptables -P OUTPUT ACCEPT',
                         'iptables -P FORWARD DROP'):
                self.cmd(line)
        sub = self.subnet
        self.cmd('iptables -I FORWARD -i %s -d %s -j DROP' % (local, sub))
        self.cmd('iptables -A FORWARD -i %s -s %s -j ACCEPT' % (local, sub))
        self.cmd('iptables -A FORWARD -o %s -d %s -j ACCEPT' % (local, sub))
        self.cmd("iptables -t nat -A POSTROUTING -s %s '!' -d %s "
                 '-j MASQUERADE' % (sub, sub))
        self.cmd('sysctl -q net.ipv4.ip_forward=1')

    def setManualConfig(self, intf):
        pass


class VMLinuxBridge(LinuxBridge):
    """CIMininet's bridge for VM hosts: a Linux bridge in a namespace
    (hymn's VM hosts' taps attach to it like any port)."""


__all__ = ['LinuxBridge', 'NAT', 'VMLinuxBridge']
