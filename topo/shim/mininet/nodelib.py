"Extra node classes of mininet.nodelib."

from mininet._stub import module_getattr
from mininet.node import Node, Switch


class LinuxBridge(Switch):
    "A Linux bridge: what hymn builds for every switch."


class NAT(Node):
    "A NAT node."


__getattr__ = module_getattr(__name__, Node)
