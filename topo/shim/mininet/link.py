"Link and interface classes of mininet.link; hymn reads their names."

from mininet._stub import module_getattr


class Intf(object):
    def __init__(self, name, node=None, port=None, link=None, **params):
        self.name, self.node, self.port, self.link = name, node, port, link
        self.params = params


class TCIntf(Intf):
    pass


class OVSIntf(Intf):
    pass


class Link(object):
    def __init__(self, node1, node2, **params):
        self.node1, self.node2, self.params = node1, node2, params


class TCLink(Link):
    pass


class TCULink(TCLink):
    pass


class OVSLink(Link):
    pass


__getattr__ = module_getattr(__name__, Link)
