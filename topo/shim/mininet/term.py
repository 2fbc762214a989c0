"mininet.term: terminals are opened by hymn's shell."

from mininet._stub import module_getattr

__getattr__ = module_getattr(__name__, object)
