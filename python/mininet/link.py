"""mininet.link for hymn: interfaces and links as proxies.

Link objects number their ports and name their interfaces as Mininet's
do (node-ethN), so a script sees the same names before and after the
network is built; hymn creates them. TCIntf's bw, delay, jitter, loss
and max_queue_size go to hymn's link emulator, one direction per
interface (an interface's egress), and intf.config(...) on a running
link changes it live and prints Mininet's "(10.00Mbit 15ms delay) " line.
"""

import re

from mininet.log import info, error, debug, warn

# The TCIntf options hymn's emulator runs; the rest are accepted and
# ignored, as Mininet ignores options it does not know.
MININET_TC_KEYS = ('bw', 'delay', 'jitter', 'loss', 'max_queue_size')
# hymn's hello replaces it with every option its emulator takes per
# interface (linkparams.IntfKeys).
TC_KEYS = MININET_TC_KEYS


class Intf(object):
    "An interface of a node; a link's end, or an existing interface."

    def emulatorParams(self):
        "What this interface's egress asks of hymn's emulator."
        out = {k: v for k, v in self.tcParams.items() if k in TC_KEYS}
        out.update((k, v) for k, v in self.hymnOptions.items()
                   if k in TC_KEYS)
        return out

    def __init__(self, name, node=None, port=None, link=None, mac=None,
                 **params):
        self.node = node
        self.name = name
        self.link = link
        self.mac = mac
        self.ip, self.prefixLen = None, None
        self.hymnIP = None  # the address hymn gave it, once built
        self.params = dict(params)
        self.tcParams = {}
        self.hymnOptions = {}  # hymn's own emulator options (TCIntf)
        self.existing = link is None and name != 'lo'
        if self.name == 'lo':
            self.ip, self.prefixLen = '127.0.0.1', 8
        if node is not None:
            node.addIntf(self, port=port)
        ip = params.get('ip')
        if ip:
            if '/' in str(ip):
                self.ip, self.prefixLen = str(ip).split('/')
            else:
                self.ip = str(ip)
        if node is not None and self.existing:
            # Intf('eth1', node=h1): an interface that exists on the
            # machine, moved into the node when the network is built
            # (or now, if it runs).
            node.net._adoptIntf(self) if node.net is not None else \
                _pendingAdopt.append(self)
        self.config(**params)

    def cmd(self, *args, **kwargs):
        return self.node.cmd(*args, **kwargs)

    def ifconfig(self, *args):
        return self.cmd('ifconfig', self.name, *args)

    def setIP(self, ipstr, prefixLen=None, **_kwargs):
        if '/' in ipstr:
            self.ip, self.prefixLen = ipstr.split('/')
        else:
            if prefixLen is None:
                raise Exception('No prefix length set for IP address %s'
                                % (ipstr,))
            self.ip, self.prefixLen = ipstr, prefixLen
        if self.node is not None and (self.node.hymn is not None or
                                      getattr(self, 'made', False)):
            return self.cmd('ip addr flush dev %s; ip addr add %s/%s dev %s'
                            % (self.name, self.ip, self.prefixLen,
                               self.name))
        # Not built yet: the address goes into the build.
        self.params['ip'] = '%s/%s' % (self.ip, self.prefixLen)
        return ''

    def setMAC(self, macstr):
        self.mac = macstr
        if self.node is not None and self.node.hymn is not None:
            return self.cmd('ip link set %s down; ip link set %s address '
                            '%s; ip link set %s up' % (self.name, self.name,
                                                       macstr, self.name))
        return ''

    def updateIP(self):
        out = self.cmd('ip -4 -o addr show dev %s' % self.name)
        m = re.search(r'inet (\d+\.\d+\.\d+\.\d+)/(\d+)', out)
        if m:
            self.ip, self.prefixLen = m.group(1), int(m.group(2))
        else:
            self.ip = None
        return self.ip

    def updateMAC(self):
        out = self.cmd('cat /sys/class/net/%s/address' % self.name)
        m = re.search(r'([0-9a-f]{2}:){5}[0-9a-f]{2}', out)
        self.mac = m.group(0) if m else None
        return self.mac

    def updateAddr(self):
        return self.updateIP(), self.updateMAC()

    def IP(self):
        return self.ip

    def MAC(self):
        if self.mac is None and self.node is not None and \
                self.node.hymn is not None:
            self.updateMAC()
        return self.mac

    def isUp(self, setUp=False):
        if setUp:
            self.cmd('ip link set %s up' % self.name)
        out = self.cmd('ip link show %s' % self.name)
        return 'UP' in out.split('>')[0] if '>' in out else False

    def rename(self, newname):
        raise NotImplementedError(
            'Intf.rename: hymn names interfaces when it builds them; give '
            'intfName1/intfName2 to addLink')

    def setParam(self, results, method, **param):
        name, value = list(param.items())[0]
        f = getattr(self, method, None)
        if not f or value is None:
            return None
        if isinstance(value, list):
            result = f(*value)
        elif isinstance(value, dict):
            result = f(**value)
        else:
            result = f(value)
        results[name] = result
        return result

    def config(self, mac=None, ip=None, ifconfig=None, up=True,
               **_params):
        "Mininet's Intf.config; addresses are set by hymn at build."
        return {}

    def delete(self):
        """Delete the interface; as with Mininet's veth pairs, its link
        (and the peer interface) goes with it."""
        if self.link is None:
            raise NotImplementedError(
                'Intf.delete of %s: hymn deletes interfaces with their '
                'link; this one has none' % self.name)
        self.link.delete()
        net = self.node.net
        if net is not None and self.link in net.links:
            net.links.remove(self.link)

    def status(self):
        if self.node is not None and self.node.hymn is not None:
            out = self.cmd('cat /sys/class/net/%s/operstate 2>/dev/null'
                           % self.name)
            return 'OK' if out.strip() else 'MISSING'
        return 'MISSING'

    def __repr__(self):
        return '<%s %s>' % (self.__class__.__name__, self.name)

    def __str__(self):
        return self.name


_pendingAdopt = []


def _tcLine(params):
    "Mininet's TCIntf line for one interface, or '' for no shaping."
    bw, delay, jitter = (params.get('bw'), params.get('delay'),
                         params.get('jitter'))
    loss, queue = params.get('loss'), params.get('max_queue_size')
    if bw is None and not delay and not loss and queue is None:
        return ''
    stuff = ((['%.2fMbit' % float(bw)] if bw is not None else []) +
             (['%s delay' % delay] if delay is not None else []) +
             (['%s jitter' % jitter] if jitter is not None else []) +
             (['%.5f%% loss' % float(loss)] if loss is not None else []) +
             (['ECN'] if params.get('enable_ecn') else ['RED']
              if params.get('enable_red') else []))
    return '(' + ' '.join(stuff) + ') '


def _checkTC(params):
    "Mininet's range checks, with its messages; bad values are dropped."
    bw, loss = params.get('bw'), params.get('loss')
    if bw is not None and not (0 <= float(bw) <= 1000000):
        error('Bandwidth limit', bw,
              'is outside supported range 0..1000000 - ignoring\n')
        params.pop('bw')
    if loss is not None and not (0 <= float(loss) <= 100):
        error('Bad loss percentage', loss, '%%\n')
        params.pop('loss')


def _hymnValue(key, value):
    if key == 'delay' or key == 'jitter':
        v = str(value)
        return v + 'us' if re.match(r'^\d+(\.\d+)?$', v) else v
    return str(value)


class TCIntf(Intf):
    "An interface shaped by hymn's emulator (Mininet's tc interface)."

    def config(self, bw=None, delay=None, jitter=None, loss=None,
               max_queue_size=None, **params):
        result = Intf.config(self, **params)
        new = {}
        for k, v in (('bw', bw), ('delay', delay), ('jitter', jitter),
                     ('loss', loss), ('max_queue_size', max_queue_size)):
            if v is not None:
                new[k] = v
        _checkTC(new)
        if 'max_queue_size' in new:
            # Mininet writes it with %d: a computed size (bdp / 1500)
            # is a float, and netem's limit takes its whole part.
            new['max_queue_size'] = int(float(new['max_queue_size']))
        new.update({k: v for k, v in params.items()
                    if k in ('enable_ecn', 'enable_red')})
        # hymn's further emulator options (NetEm's duplicate, corrupt,
        # slot, ecn...): which they are, hymn's hello says (TC_KEYS),
        # which may come after the topology is configured, so they are
        # kept and picked when the link is sent to hymn.
        extra = {k: v for k, v in params.items()
                 if k not in MININET_TC_KEYS and v is not None}
        if extra:
            self.hymnOptions = dict(self.hymnOptions, **extra)
        line = _tcLine(new)
        if not line:
            if extra and self.link is not None and self.link.deployed:
                self.link._applyTC(self)
            return result
        # Mininet's config replaces the whole qdisc: what is not given
        # goes back to its default.
        self.tcParams = new
        info(line)
        link = self.link
        if link is not None and link.deployed:
            link._applyTC(self)
        return result


class Link(object):
    """A link between two nodes: Mininet's port numbering and names;
    hymn makes a veth pair (or, on --links sriov, a VF pair)."""

    hymnKind = None  # None: the network's default link backend

    def __init__(self, node1, node2, port1=None, port2=None,
                 intfName1=None, intfName2=None, addr1=None, addr2=None,
                 intf=Intf, cls1=None, cls2=None, params1=None,
                 params2=None, fast=True, **params):
        if getattr(node1, 'net', None) is None and \
                getattr(node2, 'net', None) is None:
            raise NotImplementedError(
                'Link(%s, %s) between two nodes in the root namespace is '
                'not supported by hymn: one end must be a node in a '
                'namespace' % (node1, node2))
        if params1 is None:
            params1 = {}
        if params2 is None:
            params2 = {}
        if port2 is None:
            port2 = node2.newPort()
        if port1 is None:
            port1 = node1.newPort()
        if node1 == node2:
            raise Exception('a node cannot be linked to itself: %s' % node1)
        if not intfName1:
            intfName1 = self.intfName(node1, port1)
        if not intfName2:
            intfName2 = self.intfName(node2, port2)
        self.fast = fast
        self.deployed = False
        self.port1, self.port2 = port1, port2
        self.linkParams = dict(params)  # the link's own, e.g. kind=
        if not cls1:
            cls1 = intf
        if not cls2:
            cls2 = intf
        self.intf1 = cls1(name=intfName1, node=node1, port=port1,
                          link=self, mac=addr1, **params1)
        self.intf2 = cls2(name=intfName2, node=node2, port=port2,
                          link=self, mac=addr2, **params2)
        self.params1, self.params2 = params1, params2
        net = getattr(node1, 'net', None) or getattr(node2, 'net', None)
        # An end in the root namespace (a Node(inNamespace=False) of the
        # script's own: connectToRootNS, baresshd): a veth pair the
        # package makes there, its other end handed to hymn's node.
        self.rootIntf = None
        for intf in (self.intf1, self.intf2):
            if getattr(intf.node, 'net', None) is None and \
                    not intf.node.inNamespace:
                self.rootIntf = intf
        if net is not None and getattr(net, 'implicit', False) and \
                self not in net.links:
            # Mininet's low-level links exist once made: the implicit
            # network is built now (with this link), or takes it live.
            net.links.append(self)
            if not net.deployed:
                net._ensureDeployed('Link(%s, %s)' % (node1, node2))
                return
        if net is not None and net.deployed:
            if self.rootIntf is not None:
                net._makeRootLink(self)
            else:
                net._deployLink(self)

    @staticmethod
    def _ignore(*args, **kwargs):
        pass

    def intfName(self, node, n):
        assert self
        return node.name + '-eth' + repr(n)

    @classmethod
    def makeIntfPair(cls, *args, **kwargs):
        raise NotImplementedError('Link.makeIntfPair: hymn makes the '
                                  'pair when it builds the link')

    def hymnParams(self):
        "The link's parameters as hymn's topology takes them."
        out = {}
        for k, v in self.linkParams.items():
            # Shaping keys go per interface (tcParams, below); hymn's own
            # keys only if the interfaces took them (TC_KEYS came from
            # the hello before they were configured).
            tc = k in MININET_TC_KEYS or any(
                k in i.hymnOptions for i in (self.intf1, self.intf2))
            if tc or v is None or isinstance(v, (dict, list)):
                continue
            out[str(k)] = str(v)
        for intf, prefix, key in ((self.intf1, 'a>b.', '1'),
                                  (self.intf2, 'b>a.', '2')):
            for k, v in intf.emulatorParams().items():
                out[prefix + k] = _hymnValue(k, v)
            ip = intf.params.get('ip')
            if ip:
                out['ip' + key] = str(ip)
            if intf.mac:
                out['mac' + key] = str(intf.mac)
            out['intfName' + key] = intf.name
        if self.hymnKind:
            out['kind'] = self.hymnKind
        return out

    def _applyTC(self, intf):
        "A running link's interface changed its shaping: tell hymn."
        net = intf.node.net
        dirn = 'a>b' if intf is self.intf1 else 'b>a'
        parts = []
        for k, v in intf.emulatorParams().items():
            parts.append('%s=%s' % (k, _hymnValue(k, v)))
        if not parts:
            return
        net.conn.request('setLink', node1=self.intf1.node.name,
                         node2=self.intf2.node.name, dir=dirn,
                         params=' '.join(parts))

    def delete(self):
        "Remove the link: on a running network both interfaces go."
        net = self.intf1.node.net or self.intf2.node.net
        root = getattr(self, 'rootIntf', None)
        if root is not None:
            # The package made this pair: deleting its root end takes
            # both.
            if getattr(root, 'made', False):
                from mininet.util import errRun
                errRun(['ip', 'link', 'del', root.name])
        elif net is not None and net.deployed:
            net.conn.request('delLink', node1=self.intf1.node.name,
                             node2=self.intf2.node.name,
                             intf1=self.intf1.name)
        for intf in (self.intf1, self.intf2):
            intf.node.delIntf(intf)

    def stop(self):
        pass

    def status(self):
        return '(%s %s)' % (self.intf1.status(), self.intf2.status())

    def __str__(self):
        return '%s<->%s' % (self.intf1, self.intf2)


class OVSIntf(Intf):
    "Mininet's OVS patch-port interface."

    def ifconfig(self, *args):
        raise NotImplementedError('OVSIntf: hymn has no OVS patch ports; '
                                  'use Link')


class OVSLink(Link):
    "Mininet's OVS patch link: a veth link here."


class TCLink(Link):
    "A link whose interfaces are TCIntfs with the same parameters."

    def __init__(self, node1, node2, port1=None, port2=None,
                 intfName1=None, intfName2=None, addr1=None, addr2=None,
                 **params):
        Link.__init__(self, node1, node2, port1=port1, port2=port2,
                      intfName1=intfName1, intfName2=intfName2,
                      cls1=TCIntf, cls2=TCIntf, addr1=addr1, addr2=addr2,
                      params1=params, params2=params)


class TCULink(TCLink):
    "TCLink (Mininet's user-switch variant)."


class HwPair(Link):
    """CIMininet's hardware link: a pair of SR-IOV VFs on cabled PF ports
    with a VLAN of its own. available_pairs (process-global) lists
    (ifname, ifname) pairs of existing interfaces for links to take in
    order; while it is empty, hymn takes VF pairs from its own inventory
    (the simulated NIC on a machine without SR-IOV)."""

    available_pairs = []
    hymnKind = 'sriov'

    def __init__(self, node1, node2, **params):
        self.pair = None
        if HwPair.available_pairs:
            # An existing pair (already a wire, e.g. two VFs on one
            # VLAN): hymn's existing-interface link moves its interfaces
            # into the nodes (or hot-plugs them into VMs) under their own
            # names, and gives them back to the host at stop.
            self.pair = HwPair.available_pairs.pop(0)
            params['intfName1'], params['intfName2'] = self.pair
            self.hymnKind = 'existing'
        Link.__init__(self, node1, node2, **params)

    def intfName(self, node, n):
        return Link.intfName(self, node, n)
