"mininet.net: Mininet itself is hymn; the class only lets files import it."

from mininet._stub import module_getattr, unsupported


class Mininet(object):
    "Creating a Mininet object is not possible while hymn reads a file."
    __init__ = unsupported('mininet.net.Mininet')


class MininetWithControlNet(Mininet):
    pass


VERSION = "2.3.0 (hymn stand-in)"
__getattr__ = module_getattr(__name__, Mininet)
