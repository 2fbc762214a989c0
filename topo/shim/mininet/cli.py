"mininet.cli: hymn has its own mininet> shell."

from mininet._stub import module_getattr, unsupported


class CLI(object):
    __init__ = unsupported('mininet.cli.CLI')


__getattr__ = module_getattr(__name__, CLI)
