"""mininet.nodelib for hymn: LinuxBridge, NAT, and CIMininet's
VMLinuxBridge."""

from mininet.node import Node, Switch, LinuxBridge, Host
from mininet.log import info, warn


class NAT(Node):
    """Mininet's NAT node: hymn's NAT (masquerading the hosts' traffic
    toward the machine's namespace), linked to a switch by addNAT."""

    kind = 'router'

    def __init__(self, name, subnet='10.0/8', localIntf=None, flush=False,
                 **params):
        Node.__init__(self, name, **params)
        self.subnet = subnet
        self.localIntf = localIntf
        self.flush = flush

    def hymnParams(self):
        out = Node.hymnParams(self)
        for k in ('subnet', 'localIntf', 'flush', 'inetIntf'):
            out.pop(k, None)
        out['nat'] = '1'
        return out

    def config(self, **params):
        return Node.config(self, **params)

    def setManualConfig(self, intf):
        pass


class VMLinuxBridge(LinuxBridge):
    """CIMininet's bridge for VM hosts: a Linux bridge in a namespace
    (hymn's VM hosts' taps attach to it like any port)."""


__all__ = ['LinuxBridge', 'NAT', 'VMLinuxBridge']
