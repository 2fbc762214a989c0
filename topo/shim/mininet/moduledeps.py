"mininet.moduledeps: nothing to load while reading a topology."

from mininet._stub import module_getattr


def moduleDeps(*_args, **_kwargs):
    pass


__getattr__ = module_getattr(__name__, object)
