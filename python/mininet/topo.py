"""mininet.topo for hymn: Topo records nodes and links as Mininet's does.

The graph, the port numbering (next port = number of ports so far plus 1
for switches, 0 otherwise) and the hopts/sopts/lopts rules follow Mininet
2.3, so a topology's build() sees the same answers from port(), linkInfo()
and friends, and hymn receives the same ports Mininet would use.
"""

from mininet.util import irange, natural, naturalSeq


class MultiGraph(object):
    "Nodes and multi-edges with attribute dicts, in insertion order."

    def __init__(self):
        self.node = {}
        self.edge = {}
        self.order = []  # (src, dst, key) in the order edges were added

    def add_node(self, node, attr_dict=None, **attrs):
        attrs = dict(attrs)
        info = {} if attr_dict is None else attr_dict
        info.update(attrs)
        self.node[node] = info

    def add_edge(self, src, dst, key=None, attr_dict=None, **attrs):
        info = {} if attr_dict is None else attr_dict
        info.update(attrs)
        self.node.setdefault(src, {})
        self.node.setdefault(dst, {})
        self.edge.setdefault(src, {})
        self.edge.setdefault(dst, {})
        self.edge[src].setdefault(dst, {})
        entry = self.edge[dst][src] = self.edge[src][dst]
        if key is None:
            key = max([0] + [k for k in entry if isinstance(k, int)]) + 1
        if key not in entry:
            self.order.append((src, dst, key))
        entry[key] = info
        return key

    def nodes(self, data=False):
        return self.node.items() if data else self.node.keys()

    def edges_iter(self, data=False, keys=False):
        for src, dst, key in self.order:
            entry = self.edge.get(src, {}).get(dst, {})
            if key not in entry:
                continue
            item = (src, dst)
            if keys:
                item += (key,)
            if data:
                item += (entry[key],)
            yield item

    def edges(self, data=False, keys=False):
        return list(self.edges_iter(data=data, keys=keys))

    def __getitem__(self, node):
        return self.edge[node]

    def __len__(self):
        return len(self.node)

    def convertTo(self, cls, data=False, keys=False):
        g = cls()
        g.add_nodes_from(self.nodes(data=data))
        g.add_edges_from(self.edges(data=(data or keys), keys=keys))
        return g


class Topo(object):
    "A topology: override build() and call addHost/addSwitch/addLink."

    def __init__(self, *args, **params):
        self.g = MultiGraph()
        self.hopts = params.pop('hopts', {})
        self.sopts = params.pop('sopts', {})
        self.lopts = params.pop('lopts', {})
        self.ports = {}
        self.build(*args, **params)

    def build(self, *args, **params):
        "Override this method to build your topology."

    def addNode(self, name, **opts):
        self.g.add_node(name, **opts)
        return name

    def addHost(self, name, **opts):
        # As in Mininet, hopts apply only when no options are given.
        if not opts and self.hopts:
            opts = self.hopts
        return self.addNode(name, **opts)

    def addSwitch(self, name, **opts):
        if not opts and self.sopts:
            opts = self.sopts
        return self.addNode(name, isSwitch=True, **opts)

    def addLink(self, node1, node2, port1=None, port2=None, key=None,
                **opts):
        if not opts and self.lopts:
            opts = self.lopts
        port1, port2 = self.addPort(node1, node2, port1, port2)
        opts = dict(opts)
        opts.update(node1=node1, node2=node2, port1=port1, port2=port2)
        return self.g.add_edge(node1, node2, key, opts)

    def nodes(self, sort=True):
        if sort:
            return self.sorted(self.g.nodes())
        return list(self.g.nodes())

    def isSwitch(self, n):
        return self.g.node[n].get('isSwitch', False)

    def switches(self, sort=True):
        return [n for n in self.nodes(sort) if self.isSwitch(n)]

    def hosts(self, sort=True):
        return [n for n in self.nodes(sort) if not self.isSwitch(n)]

    def iterLinks(self, withKeys=False, withInfo=False):
        for _src, _dst, key, info in self.g.edges_iter(data=True, keys=True):
            item = (info['node1'], info['node2'])
            if withKeys:
                item += (key,)
            if withInfo:
                item += (info,)
            yield item

    def links(self, sort=False, withKeys=False, withInfo=False):
        links = list(self.iterLinks(withKeys, withInfo))
        if not sort:
            return links
        size = 3 if withKeys else 2
        return sorted(links, key=lambda l: naturalSeq(l[:size]))

    def addPort(self, src, dst, sport=None, dport=None):
        ports = self.ports
        ports.setdefault(src, {})
        ports.setdefault(dst, {})
        if sport is None:
            sport = len(ports[src]) + (1 if self.isSwitch(src) else 0)
        if dport is None:
            dport = len(ports[dst]) + (1 if self.isSwitch(dst) else 0)
        ports[src][sport] = (dst, dport)
        ports[dst][dport] = (src, sport)
        return sport, dport

    def port(self, src, dst):
        found = [(sport, entry[1]) for sport, entry in self.ports[src].items()
                 if entry[0] == dst]
        return found if len(found) != 1 else found[0]

    def _linkEntry(self, src, dst, key=None):
        entry = self.g[src][dst]
        if key is None:
            key = min(entry)
        return entry, key

    def linkInfo(self, src, dst, key=None):
        entry, key = self._linkEntry(src, dst, key)
        return entry[key]

    def setlinkInfo(self, src, dst, info, key=None):
        entry, key = self._linkEntry(src, dst, key)
        entry[key] = info

    def nodeInfo(self, name):
        return self.g.node[name]

    def setNodeInfo(self, name, info):
        self.g.node[name] = info

    def convertTo(self, cls, data=True, keys=True):
        return self.g.convertTo(cls, data=data, keys=keys)

    @staticmethod
    def sorted(items):
        return sorted(items, key=natural)


class SingleSwitchTopo(Topo):
    "Switch s1 with hosts h1..hk."

    def build(self, k=2, **_opts):
        self.k = k
        switch = self.addSwitch('s1')
        for h in irange(1, k):
            self.addLink(self.addHost('h%s' % h), switch)


class SingleSwitchReversedTopo(Topo):
    "Like SingleSwitchTopo, with h1 on the highest switch port."

    def build(self, k=2):
        self.k = k
        switch = self.addSwitch('s1')
        for h in irange(1, k):
            self.addLink(self.addHost('h%s' % h), switch,
                         port1=0, port2=(k - h + 1))


class MinimalTopo(SingleSwitchTopo):
    "Two hosts on one switch."

    def build(self):
        return SingleSwitchTopo.build(self, k=2)


class LinearTopo(Topo):
    "Switches s1..sk in a chain, n hosts on each."

    def build(self, k=2, n=1, **_opts):
        self.k, self.n = k, n
        last = None
        for i in irange(1, k):
            switch = self.addSwitch('s%s' % i)
            for j in irange(1, n):
                name = 'h%s' % i if n == 1 else 'h%ss%d' % (j, i)
                self.addLink(self.addHost(name), switch)
            if last:
                self.addLink(switch, last)
            last = switch
