"""mininet.net for hymn: the Mininet class, over a hymn network.

Mininet's control flow is kept: Mininet(topo) builds at once (build()
calls buildFromTopo, which adds controllers, hosts, switches and links
through addController/addHost/addSwitch/addLink, then configHosts calls
each host's config()), start() starts controllers and then each switch
with start(controllers), stop() stops them in Mininet's order. What
Mininet does with the kernel is asked of hymn instead: the whole
topology goes to hymn in one build request when build() runs; nodes and
links added after that are added to the running network live.
"""

import os
import re
import select
import time

from mininet.log import info, error, debug, output, warn
from mininet.node import (Node, Host, Switch, Controller, OVSKernelSwitch,
                          DefaultController, CPULimitedHost, ShellError)
from mininet.link import Link, Intf, _pendingAdopt
from mininet.util import (netParse, ipAdd, macColonHex, numCores, irange,
                          BaseString, waitListening)
from mininet import _hymn

VERSION = "2.3.0 (hymn)"

# The environment that points Open vSwitch's tools at a database (and
# PATH, where hymn's ovs-vsctl comes first: it shows controller targets
# as Mininet's switches have them).
OVS_ENV = ('OVS_RUNDIR', 'OVS_DBDIR', 'OVS_LOGDIR', 'PATH')


def _unsupported(what, instead):
    raise NotImplementedError('%s is not supported by hymn: %s'
                              % (what, instead))


class Mininet(object):
    "A network of hosts, switches, links and controllers, run by hymn."

    def __init__(self, topo=None, switch=OVSKernelSwitch, host=Host,
                 controller=DefaultController, link=Link, intf=Intf,
                 build=True, xterms=False, cleanup=False,
                 ipBase='10.0.0.0/8', inNamespace=False,
                 autoSetMacs=False, autoStaticArp=False, autoPinCpus=False,
                 listenPort=None, waitConnected=False):
        if xterms:
            _unsupported('Mininet(xterms=True)',
                         'hymn has no X terminals; use the CLI or '
                         'hymn exec NODE')
        self.topo = topo
        self.switch = switch
        self.host = host
        self.controller = controller
        self.link = link
        self.intf = intf
        self.ipBase = ipBase
        self.ipBaseNum, self.prefixLen = netParse(self.ipBase)
        hostIP = (0xffffffff >> self.prefixLen) & self.ipBaseNum
        self.nextIP = hostIP if hostIP > 0 else 1
        self.inNamespace = inNamespace
        self.xterms = xterms
        self.cleanup = cleanup
        self.autoSetMacs = autoSetMacs
        self.autoStaticArp = autoStaticArp
        self.autoPinCpus = autoPinCpus
        self.numCores = numCores()
        self.nextCore = 0
        self.listenPort = listenPort
        self.waitConn = waitConnected
        self.hosts = []
        self.switches = []
        self.controllers = []
        self.links = []
        self.nameToNode = {}
        self.terms = []
        self.conn = None
        self.hymnRun = None
        self._ovsEnvBefore = None  # os.environ's OVS_* before _pointOVSTools
        self.built = False  # Mininet's: build() ran
        self.deployed = False  # hymn built the network (on first need)
        self._constructing = False
        self._inBuild = False
        self._kind = None
        self._started = False
        self.stopped = False
        self._adopt = []
        self.implicit = False  # the low-level API's network (implicitNet)
        Mininet.init()
        if topo and build:
            self.build()

    # --- nodes -----------------------------------------------------------

    def _own(self, node):
        node.net = self
        self.nameToNode[node.name] = node
        if self.deployed:
            self._deployNode(node)
        return node

    def _make(self, cls, name, params):
        "Construct a node; commands its __init__ runs wait for the build."
        import mininet.node as nodemod
        self._constructing = True
        nodemod._constructing[0] = self
        try:
            return cls(name, **params)
        finally:
            self._constructing = False
            nodemod._constructing[0] = None

    def addHost(self, name, cls=None, **params):
        "Add a host (to the running network if it was built)."
        defaults = {'ip': ipAdd(self.nextIP, ipBaseNum=self.ipBaseNum,
                                prefixLen=self.prefixLen) +
                    '/%s' % self.prefixLen}
        if self.autoSetMacs:
            defaults['mac'] = macColonHex(self.nextIP)
        if self.autoPinCpus:
            defaults['cores'] = self.nextCore
            self.nextCore = (self.nextCore + 1) % self.numCores
        self.nextIP += 1
        defaults.update(params)
        if not cls:
            cls = self.host
        h = self._make(cls, name, defaults)
        h.net = self
        self.hosts.append(h)
        return self._own(h)

    def addSwitch(self, name, cls=None, **params):
        "Add a switch (to the running network if it was built)."
        defaults = {'listenPort': self.listenPort,
                    'inNamespace': self.inNamespace}
        defaults.update(params)
        if not cls:
            cls = self.switch
        sw = self._make(cls, name, defaults)
        sw.net = self
        if not self.inNamespace and self.listenPort:
            self.listenPort += 1
        self.switches.append(sw)
        return self._own(sw)

    def addController(self, name='c0', controller=None, **params):
        "Add a controller (hymn runs it for OpenFlow switches)."
        if not controller:
            controller = self.controller
        if isinstance(name, Controller):
            c = name
            name = c.name
        else:
            c = controller(name, **params)
        if c:
            self.controllers.append(c)
            c.net = self
            self.nameToNode[name] = c
            if self.deployed:
                _unsupported('addController on a running network',
                             'add controllers before build()/start()')
        return c

    def addNAT(self, name='nat0', connect=True, inNamespace=False,
               **params):
        "Add Mininet's NAT node: hymn masquerades the hosts' traffic."
        from mininet.nodelib import NAT
        if self.deployed:
            _unsupported('addNAT on a running network',
                         'add the NAT before start() (hymn sets up its '
                         'masquerading when it builds the network)')
        nat = self.addHost(name, cls=NAT, inNamespace=True,
                           subnet=self.ipBase, hymnRootNAT=True, **params)
        if connect:
            if not isinstance(connect, Node):
                connect = self.switches[0]
            self.addLink(nat, connect)
            natIP = nat.params['ip'].split('/')[0]
            for host in self.hosts:
                if host.inNamespace and host is not nat:
                    host.params.setdefault('defaultRoute', 'via %s' % natIP)
        return nat

    def addNode(self, name, cls=Node, **params):
        return self.addHost(name, cls=cls, **params)

    def delNode(self, node, nodes=None):
        """Remove a node and its links; on a running network hymn deletes
        its namespace (or VM) and the links' interfaces at once."""
        if self.deployed:
            self.conn.request('delNode', name=node.name)
        node.stop()
        for lst in (self.hosts, self.switches, self.controllers):
            if node in lst:
                lst.remove(node)
        for link in list(self.links):
            if node in (link.intf1.node, link.intf2.node):
                self.links.remove(link)
                for intf in (link.intf1, link.intf2):
                    intf.node.delIntf(intf)
        self.nameToNode.pop(node.name, None)

    def delHost(self, host):
        self.delNode(host)

    def delSwitch(self, switch):
        self.delNode(switch)

    def delController(self, controller):
        self.delNode(controller)

    def getNodeByName(self, *args):
        if len(args) == 1:
            return self.nameToNode[args[0]]
        return [self.nameToNode[n] for n in args]

    def get(self, *args):
        return self.getNodeByName(*args)

    def __getitem__(self, key):
        return self.nameToNode[key]

    def __delitem__(self, key):
        self.delNode(self.nameToNode[key])

    def __iter__(self):
        for node in self.hosts + self.switches + self.controllers:
            yield node.name

    def __len__(self):
        return len(self.hosts) + len(self.switches) + len(self.controllers)

    def __contains__(self, item):
        return item in self.nameToNode

    def keys(self):
        return list(self)

    def values(self):
        return [self[n] for n in self]

    def items(self):
        return zip(self.keys(), self.values())

    @staticmethod
    def randMac():
        import random
        return macColonHex(random.randint(1, 2 ** 48 - 1) & 0xfeffffffffff |
                           0x020000000000)

    # --- links -----------------------------------------------------------

    def addLink(self, node1, node2, port1=None, port2=None, cls=None,
                **params):
        "Add a link (to the running network if it was built)."
        node1 = node1 if not isinstance(node1, BaseString) else self[node1]
        node2 = node2 if not isinstance(node2, BaseString) else self[node2]
        for n in (node1, node2):
            if self.nameToNode.get(n.name) is not n and \
                    not (n.net is None and not n.inNamespace):
                _unsupported('addLink to %s, a node this Mininet did not add '
                             "(Mininet's connectToRootNS links a root-"
                             'namespace Node)' % n.name,
                             'reach the machine through addNAT(), or add '
                             'the node with addHost')
        options = dict(params)
        if port1 is not None:
            options['port1'] = port1
        if port2 is not None:
            options['port2'] = port2
        cls = self.link if cls is None else cls
        options.setdefault('intf', self.intf)
        link = cls(node1, node2, **options)
        self.links.append(link)
        return link

    def delLink(self, link):
        if self.deployed:
            link.delete()
        self.links.remove(link)

    def linksBetween(self, node1, node2):
        return [link for link in self.links
                if (node1, node2) in ((link.intf1.node, link.intf2.node),
                                      (link.intf2.node, link.intf1.node))]

    def delLinkBetween(self, node1, node2, index=0, allLinks=False):
        links = self.linksBetween(node1, node2)
        if not allLinks:
            links = [links[index]]
        for link in links:
            self.delLink(link)
        return links

    # --- building ----------------------------------------------------------

    def configHosts(self):
        "Call each host's config() (Mininet's configDefault)."
        for host in self.hosts:
            info(host.name + ' ')
            host.configDefault()
        info('\n')

    def buildFromTopo(self, topo=None):
        "Add the topology's nodes and links, printing Mininet's lines."
        info('*** Creating network\n')
        if not self.controllers and self.controller:
            info('*** Adding controller\n')
            classes = self.controller
            if not isinstance(classes, list):
                classes = [classes]
            for i, cls in enumerate(classes):
                if isinstance(cls, Controller):
                    self.addController(cls)
                else:
                    self.addController('c%d' % i, cls)
        info('*** Adding hosts:\n')
        for hostName in topo.hosts():
            self.addHost(hostName, **topo.nodeInfo(hostName))
            info(hostName + ' ')
        info('\n*** Adding switches:\n')
        for switchName in topo.switches():
            params = topo.nodeInfo(switchName)
            cls = params.get('cls', self.switch)
            self.addSwitch(switchName, **params)
            info(switchName + ' ')
        info('\n*** Adding links:\n')
        for srcName, dstName, params in topo.links(sort=True,
                                                    withInfo=True):
            self.addLink(**params)
            info('(%s, %s) ' % (srcName, dstName))
        info('\n')

    def configureControlNetwork(self):
        "Switches and controllers reach each other through hymn."

    def _switchKind(self):
        forced = _hymn.defaults()['switch']
        if forced:
            return forced
        kinds = []
        for s in self.switches:
            k = getattr(s, 'hymnKind', 'lxbr')
            if k not in kinds:
                kinds.append(k)
        if not kinds:
            cls = self.switch
            k = getattr(cls, 'hymnKind', None)
            if k is None:
                try:
                    k = getattr(cls('s0'), 'hymnKind', 'lxbr')
                except Exception:
                    k = 'lxbr'
            return k
        if len(kinds) > 1:
            warn('*** hymn: switches of kinds %s in one network: all are '
                 'built as %s\n' % (', '.join(kinds), kinds[0]))
        return kinds[0]

    def _nodeSpec(self, node):
        kind = getattr(node, 'kind', 'host')
        return {'name': node.name, 'kind': kind,
                'params': node.hymnParams()}

    def _linkSpec(self, link):
        params = link.hymnParams()
        from mininet.link import TCIntf, TC_KEYS
        if self._kind == 'ovsk' and isinstance(link.intf1, TCIntf) and \
                not any(k.split('.')[-1] in TC_KEYS for k in params):
            # A TCLink's emulator is there from the start, so a later
            # intf.config() changes it instead of inserting one (which
            # hymn cannot do on an Open vSwitch port yet).
            params['delay'] = '0ms'
        return {'node1': link.intf1.node.name, 'node2': link.intf2.node.name,
                'port1': link.port1, 'port2': link.port2,
                'params': params}

    def _connect(self):
        if self.conn is None:
            self.conn = _hymn.Connection()
            if self.implicit:
                # No stop() ends it: hymn keeps it after the script if
                # processes outlive the script in it (a daemon).
                self.conn.request('lowLevel')
                self.conn.beforeClose.append(self._hangUpAtExit)
        return self.conn

    def _hangUpAtExit(self):
        """The low-level API has no stop(): when the script ends, its
        nodes' shells hang up, as they do in Mininet when the script's
        end closes their terminals. A process that still runs in a node
        afterwards (a daemon: sshd forks away from its shell) keeps the
        network, as Mininet's namespaces live on with their processes;
        hymn says so, and hymn clean removes it."""
        if self.stopped or not self.deployed:
            return
        from mininet.node import settleJobs, waitHungUp, _VMShell
        shells = [n for n in self.hosts + self.switches
                  if n._shell is not None and
                  not isinstance(n._shell, _VMShell)]
        settleJobs([n._shell.pid for n in shells])
        for n in shells:
            n.terminate()
        waitHungUp()

    def _ensureDeployed(self, why=''):
        """Have hymn make what the script added so far (a node's shell
        needs its namespace), without Mininet's build() when the script
        has not called it: nodes and links added later join live, and
        build() or start() still configures the hosts where Mininet
        does."""
        if not self.built and not self._inBuild and self.topo is not None:
            self._ensureBuilt(why)
            return
        debug('*** %s needs the network: deploying it\n' % why)
        self._deploy()

    def _ensureBuilt(self, why=''):
        "Build (Mininet's build) and deploy (hymn's) if not done yet."
        if not self.built and not self._inBuild:
            debug('*** %s needs the network: building it\n' % why)
            self.build()
        self._deploy()

    def _absorb(self, infos):
        "Take hymn's view of the nodes: backend, MACs, namespaces."
        byName = dict((n['name'], n) for n in infos)
        for name, node in self.nameToNode.items():
            ni = byName.get(name)
            if ni is None:
                continue
            node.hymn = ni
            for ii in ni.get('intfs') or []:
                intf = node.nameToIntf.get(ii['name'])
                if intf is None:
                    continue
                if ii.get('ip'):
                    intf.ip, intf.prefixLen = ii['ip'], ii.get('prefixLen')
                # What hymn knows: a ping to another address (setIP after
                # the build) names it (_pingResults).
                intf.hymnIP = ii.get('ip') or None
                if ii.get('mac'):
                    intf.mac = ii['mac']

    def build(self):
        """Build the network as Mininet does (nodes and links, then each
        host's config()); hymn builds it in one request when something
        first needs it (start(), a command, a ping), so nodes and links
        added before that are part of the same build."""
        self._inBuild = True
        try:
            if self.topo:
                self.buildFromTopo(self.topo)
            if self.inNamespace:
                self.configureControlNetwork()
            info('*** Configuring hosts\n')
            self.configHosts()
        finally:
            self._inBuild = False
        self.built = True

    def _deploy(self):
        if self.deployed:
            return
        if self.stopped:
            raise _hymn.HymnError('the network was stopped', 'state')
        kind = self._kind = self._switchKind()
        d = _hymn.defaults()
        controllers = []
        if kind == 'ovsk':
            for c in self.controllers:
                spec = c.hymnSpecString()
                if spec:
                    controllers.append({'name': c.name, 'spec': spec})
        # Connected first: the hello says which link options hymn's
        # emulator takes (link.TC_KEYS), which the links' specs use.
        conn = self._connect()
        nodes = [self._nodeSpec(n) for n in self.hosts + self.switches]
        links = [self._linkSpec(l) for l in self.links
                 if getattr(l, 'rootIntf', None) is None]
        res = conn.request('build', nodes=nodes, links=links,
                           controllers=controllers, options={
                               'switch': kind, 'nodes': d['nodes'],
                               'links': d['links'], 'ipBase': self.ipBase,
                               'autoSetMacs': self.autoSetMacs,
                               'autoStaticArp': self.autoStaticArp})
        self.hymnRun = res["run"]
        self.deployed = True
        for link in self.links:
            link.deployed = True
        self._absorb(res['nodes'])
        self._pointOVSTools(res['nodes'])
        for intf in _pendingAdopt + list(self._adopt):
            self._adoptIntf(intf)
        del _pendingAdopt[:]
        for link in self.links:
            if getattr(link, 'rootIntf', None) is not None:
                self._makeRootLink(link)
        self._runEarly()

    def _pointOVSTools(self, nodes):
        """With OpenFlow switches, ovs-vsctl and ovs-ofctl run by the
        script or its CLI's sh (os.system, quietRun) reach hymn's Open
        vSwitch, where Mininet's would reach the system's."""
        for info in nodes:
            d = info.get('ovsDir')
            if d and self._ovsEnvBefore is None:
                self._ovsEnvBefore = {k: os.environ.get(k) for k in OVS_ENV}
                for k in OVS_ENV[:3]:
                    os.environ[k] = d
                shim = os.environ.get('HYMN_PY_SHIM')
                if shim:
                    os.environ['PATH'] = shim + ':' + \
                        os.environ.get('PATH', '')
                return

    def _restoreOVSTools(self):
        "After stop, the tools reach what they reached before."
        before, self._ovsEnvBefore = self._ovsEnvBefore, None
        for k, v in (before or {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def _runEarly(self):
        for node in self.hosts + self.switches:
            early, node._early = node._early, []
            for args, kwargs in early:
                node.cmd(*args, **kwargs)

    def _deployNode(self, node):
        res = self.conn.request('addNode', **self._nodeSpec(node))
        self._absorb([res])
        self._pointOVSTools([res])
        self._runEarly()

    def _deployLink(self, link):
        spec = self._linkSpec(link)
        res = self.conn.request('addLink', **spec)
        link.deployed = True
        self._absorb([res['node1'], res['node2']])

    def adoptNode(self, node):
        "A node of the low-level API joins this (implicit) network."
        node.net = self
        self.hosts.append(node)
        self.nameToNode[node.name] = node

    def _makeRootLink(self, link):
        """A link to a node in the root namespace: a veth pair made
        there; the other end goes to its node as an existing interface
        (moved into a namespace, or made a switch's port). The root end
        goes when that node's namespace does."""
        from mininet.util import errRun
        root = link.rootIntf
        other = link.intf2 if root is link.intf1 else link.intf1
        if other.node.hymn is None and other.node.inNamespace and \
                not getattr(other.node, 'kind', '') == 'switch':
            self._deployNode(other.node)
        # A pair of a node just deleted goes with its namespace, which
        # the kernel frees in the background: on a busy machine (other
        # networks' namespaces being freed too) that took over 3 s, and a
        # script that makes its network again (sshd.py once per test)
        # found the old root-eth0 still there.
        deadline = time.time() + 20
        while True:
            _, err, code = errRun(['ip', 'link', 'add', other.name, 'type',
                                   'veth', 'peer', 'name', root.name])
            if not code or 'File exists' not in err or \
                    time.time() > deadline:
                break
            time.sleep(0.05)
        if code:
            raise _hymn.HymnError('link %s: %s' % (link, err.strip()))
        # Checksums complete on the wire, as on hymn's own links: a
        # switch's user-space datapath forwards a partial one as it is.
        for name in (root.name, other.name):
            errRun(['ethtool', '-K', name, 'tx', 'off'])
        if root.mac:
            errRun(['ip', 'link', 'set', root.name, 'address', root.mac])
        errRun(['ip', 'link', 'set', root.name, 'up'])
        ip = root.params.get('ip')
        if ip:
            errRun(['ip', 'addr', 'add', str(ip) if '/' in str(ip) else
                    '%s/8' % ip, 'dev', root.name])
        root.made = True
        link.deployed = True
        nodeIP = other.node.params.get('ip')
        if not other.params.get('ip') and nodeIP and \
                other.node.defaultIntf() is other:
            # The node's address on its default interface, as hymn gives
            # it to the links it makes (Mininet's config sets it).
            ip = str(nodeIP) if '/' in str(nodeIP) else '%s/8' % nodeIP
            other.params['ip'] = ip
            other.ip, other.prefixLen = ip.split('/')
        self._adoptIntf(other)

    def _adoptIntf(self, intf):
        from mininet.node import Switch
        if not self.deployed or (not self._started and self._kind == 'ovsk'
                                 and isinstance(intf.node, Switch)):
            # An OpenFlow switch's bridge exists once hymn started it.
            if intf not in self._adopt:
                self._adopt.append(intf)
            return
        if intf in self._adopt:
            self._adopt.remove(intf)
        res = self.conn.request('adoptIntf', node=intf.node.name,
                                name=intf.name,
                                ip=intf.params.get('ip') or '')
        self._absorb([res])

    # --- running -----------------------------------------------------------

    def start(self):
        "Start controllers and switches (building first if needed)."
        self._ensureBuilt('start')
        info('*** Starting controller\n')
        for controller in self.controllers:
            info(controller.name + ' ')
        self._hymnStart()
        for controller in self.controllers:
            controller.start()
        info('\n')
        info('*** Starting %s switches\n' % len(self.switches))
        for switch in self.switches:
            info(switch.name + ' ')
            switch.start(self.controllers)
        info('\n')
        if self.waitConn:
            self.waitConnected(self.waitConn)

    def _hymnStart(self):
        """hymn starts the controllers and connects the switches (and
        waits for STP): once, from start() or from the first
        controller.start()/switch.start() of a script that starts them
        itself (Mininet's mid-level API)."""
        self._ensureBuilt('start')
        if not self._started:
            self.conn.request('start')
            self._started = True
            for intf in list(self._adopt):
                self._adoptIntf(intf)

    def stop(self):
        "Stop everything and have hymn remove the network."
        if self.stopped:
            return
        self.stopped = True
        self._restoreOVSTools()
        from mininet.node import settleJobs, _VMShell
        settleJobs([n._shell.pid for n in self.hosts + self.switches
                    if n._shell is not None and
                    not isinstance(n._shell, _VMShell)])
        info('*** Stopping %i controllers\n' % len(self.controllers))
        for controller in self.controllers:
            info(controller.name + ' ')
            controller.stop()
        info('\n')
        info('*** Stopping %i links\n' % len(self.links))
        for link in self.links:
            info('.')
            link.stop()
        info('\n')
        info('*** Stopping %i switches\n' % len(self.switches))
        for switch in self.switches:
            info(switch.name + ' ')
            switch.stop()
        info('\n')
        info('*** Stopping %i hosts\n' % len(self.hosts))
        for host in self.hosts:
            info(host.name + ' ')
            host.terminate()
        from mininet.node import waitHungUp
        waitHungUp()
        if self.conn is not None and self.deployed:
            try:
                self.conn.request('stop')
            finally:
                self.conn.close()
            self._waitRootLinksGone()
        info('\n*** Done\n')

    def _waitRootLinksGone(self, timeout=10):
        """The root namespace's ends of links to root-namespace nodes go
        with their peers' namespaces, which the kernel frees in the
        background: waited for (at most timeout s), so that a script that
        builds the network again (or the next one) finds the name free,
        as after Mininet's stop."""
        names = [l.rootIntf.name for l in self.links
                 if getattr(l, 'rootIntf', None) is not None]
        deadline = time.time() + timeout
        while names and time.time() < deadline:
            names = [n for n in names
                     if os.path.exists('/sys/class/net/%s' % n)]
            if names:
                time.sleep(0.05)

    def waitConnected(self, timeout=None, delay=.5):
        "Wait for the switches to connect to their controllers."
        info('*** Waiting for switches to connect\n')
        self.conn.request('waitConnected')
        for switch in self.switches:
            info('%s ' % switch)
        info('\n')
        return True

    def run(self, test, *args, **kwargs):
        "Start, run test, stop; return the test's result."
        self.start()
        info('*** Running test\n')
        result = test(*args, **kwargs)
        self.stop()
        return result

    def monitor(self, hosts=None, timeoutms=-1):
        "Yield (host, line) from the hosts' shells as output arrives."
        if hosts is None:
            hosts = self.hosts
        poller = select.poll()
        h1 = hosts[0]
        for host in hosts:
            poller.register(host.stdout)
        while True:
            ready = poller.poll(timeoutms)
            for fd, event in ready:
                host = h1.outToNode[fd]
                if event & select.POLLIN:
                    line = host.readline()
                    if line is not None:
                        yield host, line
            if not ready:
                yield None, None

    def staticArp(self):
        for src in self.hosts:
            for dst in self.hosts:
                if src != dst:
                    src.setARP(ip=dst.IP(), mac=dst.MAC())

    # --- tests -----------------------------------------------------------

    def _pingResults(self, hosts, timeout):
        self._ensureBuilt('ping')
        names = [h.name for h in hosts if h.intfs]
        # Mininet pings each host at its IP(), its default interface's
        # address as the script last set it; hymn knows the addresses it
        # gave, so the others travel with the request.
        addrs = {}
        for h in hosts:
            intf = h.defaultIntf() if h.intfs else None
            if intf is not None and intf.IP() and \
                    intf.IP() != getattr(intf, 'hymnIP', None):
                addrs[h.name] = intf.IP()
        return self.conn.request('ping', hosts=names,
                                 timeout=float(timeout or 0), addrs=addrs)

    def _pingRows(self, hosts, results):
        got = {}
        for r in results:
            got[(r['src'], r['dst'])] = r
        for node in hosts:
            output('%s -> ' % node.name)
            for dest in hosts:
                if node != dest:
                    r = got.get((node.name, dest.name))
                    received = r['received'] if r else 0
                    output(('%s ' % dest.name) if received else 'X ')
            output('\n')

    def ping(self, hosts=None, timeout=None):
        "Ping between all the hosts; return the percentage dropped."
        packets = lost = 0
        ploss = None
        if not hosts:
            hosts = self.hosts
            output('*** Ping: testing ping reachability\n')
        results = self._pingResults(hosts, timeout)
        self._pingRows(hosts, results)
        for r in results:
            packets += r['sent']
            lost += r['sent'] - r['received']
        if packets > 0:
            ploss = 100.0 * lost / packets
            received = packets - lost
            output("*** Results: %i%% dropped (%d/%d received)\n" %
                   (ploss, received, packets))
        else:
            ploss = 0
            output("*** Warning: No packets sent\n")
        return ploss

    def pingFull(self, hosts=None, timeout=None):
        "Ping between all the hosts; return every pair's figures."
        all_outputs = []
        if not hosts:
            hosts = self.hosts
            output('*** Ping: testing ping reachability\n')
        results = self._pingResults(hosts, timeout)
        self._pingRows(hosts, results)
        output("*** Results: \n")
        for r in results:
            src, dest = self[r['src']], self[r['dst']]
            out = (r['sent'], r['received'], r['rttmin'], r['rttavg'],
                   r['rttmax'], r['rttdev'])
            all_outputs.append((src, dest, out))
            output(" %s->%s: %s/%s, " % (src, dest, r['sent'],
                                        r['received']))
            output("rtt min/avg/max/mdev %0.3f/%0.3f/%0.3f/%0.3f ms\n" %
                   (r['rttmin'], r['rttavg'], r['rttmax'], r['rttdev']))
        return all_outputs

    def pingAll(self, timeout=None):
        return self.ping(timeout=timeout)

    def pingPair(self):
        return self.ping(hosts=self.hosts[:2])

    def pingAllFull(self):
        return self.pingFull()

    def pingPairFull(self):
        return self.pingFull(hosts=self.hosts[:2])

    @staticmethod
    def _parseIperf(iperfOutput):
        "The last rate iperf printed ('9.38 Mbits/sec'), or ''."
        r = r'([\d\.]+ \w+/sec)'
        m = re.findall(r, iperfOutput)
        if m:
            return m[-1]
        error('could not parse iperf output: ' + iperfOutput)
        return ''

    @staticmethod
    def _iperfVals(iperfcsv, serverip):
        """The last report of iperf -y C output as a dict (date, cip,
        cport, sip, sport, ipver, interval, sent, rate), turned so that
        cip/cport is the client and sip/sport the server whose address is
        serverip, whichever side printed it."""
        names = ('date', 'cip', 'cport', 'sip', 'sport', 'ipver',
                 'interval', 'sent', 'rate')
        vals = {}
        for line in iperfcsv.strip().splitlines():
            if ',' not in line:
                continue
            vals = dict(zip(names, line.strip().split(',')))
            if vals.get('cip') == serverip:
                vals['cip'], vals['sip'] = vals['sip'], vals['cip']
                vals['cport'], vals['sport'] = vals['sport'], vals['cport']
        return vals

    def iperf(self, hosts=None, l4Type='TCP', udpBw='10M', fmt=None,
              seconds=5, port=5001):
        """Measure TCP (or UDP) bandwidth between two hosts with iperf in
        their shells, as Mininet does; return [server, client] rates
        (UDP: [udpBw, server, client])."""
        self._ensureBuilt('iperf')
        hosts = hosts or [self.hosts[0], self.hosts[-1]]
        assert len(hosts) == 2
        client, server = hosts
        output('*** Iperf: testing', l4Type, 'bandwidth between',
               client, 'and', server, '\n')
        if l4Type not in ('TCP', 'UDP'):
            raise Exception('Unexpected l4 type: %s' % l4Type)
        if client._isVM() or server._isVM():
            # A VM's shell cannot be interrupted from here: hymn runs it.
            res = self.conn.request('iperf', client=client.name,
                                    server=server.name, seconds=seconds,
                                    udp=(l4Type == 'UDP'), udpBw=udpBw)
            result = [res['serverText'], res['clientText']]
        else:
            result = self._shellIperf(client, server, l4Type, udpBw, fmt,
                                      seconds, port)
        if l4Type == 'UDP':
            result.insert(0, udpBw)
        output('*** Results: %s\n' % result)
        return result

    def _shellIperf(self, client, server, l4Type, udpBw, fmt, seconds,
                    port):
        iperfArgs = 'iperf -p %d ' % port
        bwArgs = ''
        if l4Type == 'UDP':
            iperfArgs += '-u '
            bwArgs = '-b ' + udpBw + ' '
        if fmt:
            iperfArgs += '-f %s ' % fmt
        server.sendCmd(iperfArgs + '-s')
        try:
            if l4Type == 'TCP':
                if not waitListening(client, server.IP(), port,
                                     timeout=10):
                    raise Exception('Could not connect to iperf on port %d'
                                    % port)
            cliout = client.cmd(iperfArgs + '-t %d -c ' % seconds +
                                server.IP() + ' ' + bwArgs)
            debug('Client output: %s\n' % cliout)
            servout = ''
            # The server's report of the test's connection (iperf 2.1
            # prints none for waitListening's probe, 2.0 does): wait for
            # one, then briefly for a second, never for ever.
            deadline = time.time() + 15
            while time.time() < deadline:
                data = server.monitor(timeoutms=1000)
                servout += data
                if '/sec' in servout and not data:
                    break
        finally:
            server.sendInt()
            servout_tail = server.waitOutput()
        servout += servout_tail
        debug('Server output: %s\n' % servout)
        return [self._parseIperf(servout), self._parseIperf(cliout)]

    def runCpuLimitTest(self, cpu, duration=5):
        """Run busy loops on every host for duration s; return the CPU
        share each host got (percent of the machine), as Mininet prints."""
        pct = cpu * 100
        info('*** Testing CPU %.0f%% bandwidth limit\n' % pct)
        hosts = self.hosts
        cores = numCores()
        pids = {}
        for h in hosts:
            pids[h] = []
            for _ in range(cores):
                h.cmd('while true; do a=1; done &')
                pids[h].append(h.lastPid)
        before = [_cpuSeconds(pids[h]) for h in hosts]
        t0 = time.time()
        time.sleep(duration)
        elapsed = time.time() - t0
        after = [_cpuSeconds(pids[h]) for h in hosts]
        fractions = [100.0 * (a - b) / elapsed / cores
                     for b, a in zip(before, after)]
        for h in hosts:
            h.cmd('kill %s 2>/dev/null; wait 2>/dev/null'
                  % ' '.join(str(p) for p in pids[h] if p))
        output('*** Results: %s\n' % fractions)
        return fractions

    def configLinkStatus(self, src, dst, status):
        "Bring the links between src and dst up or down."
        if src not in self.nameToNode:
            error('src not in network: %s\n' % src)
            return
        if dst not in self.nameToNode:
            error('dst not in network: %s\n' % dst)
            return
        self._ensureBuilt('configLinkStatus')
        try:
            self.conn.request('linkStatus', node1=src, node2=dst,
                              status=status)
        except _hymn.HymnError as e:
            if 'not connected' in str(e):
                error('src and dst not connected: %s %s\n' % (src, dst))
            else:
                error('link status change failed: %s\n' % e)

    def interact(self):
        "Start, run the CLI, stop."
        from mininet.cli import CLI
        self.start()
        result = CLI(self)
        self.stop()
        return result

    inited = False

    @classmethod
    def init(cls):
        cls.inited = True


def _cpuSeconds(pids):
    "CPU time (user and system) the processes have used, in seconds."
    tick = os.sysconf('SC_CLK_TCK')
    total = 0.0
    for pid in pids:
        try:
            with open('/proc/%d/stat' % pid) as f:
                fields = f.read().rsplit(')', 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / float(tick)
        except (OSError, ValueError, IndexError, TypeError):
            pass
    return total


_implicit = [None]


def implicitNet():
    """The network of the nodes a script makes without a Mininet object
    (Mininet's low-level API: Node('h0'), Link(h0, s0)); hymn builds it
    when one of them first needs it, and removes it when the script
    ends."""
    if _implicit[0] is None:
        from mininet.node import LinuxBridge
        net = Mininet(controller=None, switch=LinuxBridge, build=False)
        net.implicit = True
        _implicit[0] = net
    return _implicit[0]


class MininetWithControlNet(Mininet):
    def __init__(self, *args, **kwargs):
        _unsupported('MininetWithControlNet',
                     'hymn connects switches and controllers itself; '
                     'use Mininet')
