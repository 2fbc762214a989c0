"Node classes of mininet.node. hymn reads which class a node asks for."

from mininet._stub import module_getattr, unsupported


class Node(object):
    "A node; hymn builds it, so the stand-in class only carries a name."
    portBase = 0

    def __init__(self, name, inNamespace=True, **params):
        self.name = name
        self.inNamespace = inNamespace
        self.params = params

    def config(self, **_params):
        return {}

    cmd = unsupported('Node.cmd')
    popen = unsupported('Node.popen')
    sendCmd = unsupported('Node.sendCmd')

    def __repr__(self):
        return '<%s %s>' % (self.__class__.__name__, self.name)


class Host(Node):
    "A host."


class CPULimitedHost(Host):
    "A host with a CPU share (cpu=, sched=, cores=)."


class HostWithPrivateDirs(Host):
    "A host with private directories."


class Switch(Node):
    "A switch; hymn builds every switch class as a learning bridge."
    portBase = 1
    dpidLen = 16


class UserSwitch(Switch):
    pass


class OVSSwitch(Switch):
    pass


OVSKernelSwitch = OVSSwitch


class OVSBridge(OVSSwitch):
    pass


class IVSSwitch(Switch):
    pass


class Controller(Node):
    "OpenFlow controllers are not used by hymn."


class OVSController(Controller):
    pass


class NOX(Controller):
    pass


class Ryu(Controller):
    pass


class RemoteController(Controller):
    pass


class NullController(Controller):
    pass


DefaultController = Controller

__getattr__ = module_getattr(__name__, Node)
