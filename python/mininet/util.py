"""mininet.util for hymn: Mininet's helpers, run on this machine.

Process helpers (quietRun, errRun, pmonitor, waitListening) run real
commands, as Mininet's do; node-related ones ask the node proxies.
"""

import os
import re
import select
import shlex
import subprocess
import sys
import time
import functools
from functools import partial

# warn too: Mininet's util exports it.
from mininet.log import output, info, error, debug, warn  # noqa: F401

BaseString = str
Python3 = True
Encoding = 'utf-8'


class _StrPexpect(object):
    """mininet.util.pexpect, as Mininet 2.3 has it (its tests import
    it): the pexpect module, with spawn() reading and writing str."""

    def __init__(self, module):
        self._module = module

    def spawn(self, *args, **kwargs):
        kwargs.setdefault('encoding', 'utf-8')
        return self._module.spawn(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._module, name)


try:
    import pexpect as _pexpect
    pexpect = _StrPexpect(_pexpect)
except ImportError:  # as in Mininet: only where pexpect is installed
    pass


def irange(start, end):
    "Inclusive range, as Mininet's irange."
    return range(start, end + 1)


def natural(text):
    "Sort key that orders runs of digits as numbers (h2 before h10)."
    def num(s):
        return int(s) if s.isdigit() else s
    return [num(s) for s in re.split(r'(\d+)', str(text))]


def naturalSeq(t):
    "Natural sort key for a sequence."
    return [natural(x) for x in t]


def checkInt(s):
    try:
        int(s)
        return True
    except ValueError:
        return False


def checkFloat(s):
    try:
        float(s)
        return True
    except ValueError:
        return False


def makeNumeric(s):
    "int if it reads as one, else float, else the string (mn's rule)."
    if checkInt(s):
        return int(s)
    if checkFloat(s):
        return float(s)
    return s


def splitArgs(argstr):
    "Split 'name,a,b,k=v' into name, positional args and keyword args."
    split = argstr.split(',')
    fn = split[0]
    params = split[1:]
    args = [makeNumeric(s) for s in params if '=' not in s]
    kwargs = {}
    for s in [p for p in params if '=' in p]:
        key, val = s.split('=', 1)
        kwargs[key] = makeNumeric(val)
    return fn, args, kwargs


def customClass(classes, argStr):
    "Look up a class by spec string and bind its arguments."
    cname, args, kwargs = splitArgs(argStr)
    cls = classes.get(cname, None)
    if not cls:
        raise Exception("error: %s is unknown - please specify one of %s" %
                        (cname, classes.keys()))
    if not args and not kwargs:
        return cls
    return specialClass(cls, append=args, defaults=kwargs)


def specialClass(cls, prepend=None, append=None, defaults=None,
                 override=None):
    "A subclass of cls with extra arguments, as Mininet's specialClass."
    prepend = prepend or []
    append = append or []
    defaults = defaults or {}
    override = override or {}

    class CustomClass(cls):
        def __init__(self, *args, **params):
            merged = dict(defaults)
            merged.update(params)
            merged.update(override)
            cls.__init__(self, *(list(prepend) + list(args) + list(append)),
                         **merged)
    CustomClass.__name__ = '%s%s' % (cls.__name__, defaults)
    return CustomClass


def custom(cls, **params):
    "cls with default parameters, as Mininet's custom()."
    def customized(*args, **kwargs):
        merged = dict(params)
        merged.update(kwargs)
        return cls(*args, **merged)
    customized.__name__ = 'custom(%s,%s)' % (cls, params)
    customized.hymn_class = cls
    customized.hymn_params = params
    customized.func = cls
    customized.keywords = params
    return customized


def buildTopo(topos, topoStr):
    "Build a topology from a spec string."
    topo, args, kwargs = splitArgs(topoStr)
    if topo not in topos:
        raise Exception('Invalid topo name %s' % topo)
    return topos[topo](*args, **kwargs)


def ipNum(w, x, y, z):
    return (w << 24) | (x << 16) | (y << 8) | z


def ipStr(ip):
    return '%i.%i.%i.%i' % (ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff,
                           ip & 0xff)


def ipAdd(i, prefixLen=8, ipBaseNum=0x0a000000):
    "Address number i in the base network (no prefix length appended)."
    imax = 0xffffffff >> prefixLen
    assert i <= imax, 'Not enough IP addresses in the subnet'
    mask = 0xffffffff ^ imax
    return ipStr((ipBaseNum & mask) + i)


def ipParse(ip):
    args = [int(arg) for arg in ip.split('.')]
    while len(args) < 4:
        args.insert(len(args) - 1, 0)
    return ipNum(*args)


def netParse(ipstr):
    prefixLen = 0
    if '/' in ipstr:
        ip, pf = ipstr.split('/')
        prefixLen = int(pf)
    else:
        ip = ipstr
    return ipParse(ip), prefixLen


def macColonHex(mac):
    return ':'.join('%02x' % ((mac >> s) & 0xff) for s in range(40, -8, -8))


def numCores():
    "Number of CPU cores, as Mininet's numCores."
    return os.cpu_count() or 1


def decode(s):
    "bytes to str (UTF-8), as Mininet's decode."
    return s.decode('utf-8', 'replace') if isinstance(s, bytes) else s


def encode(s):
    return s.encode() if isinstance(s, str) else s


def _argv(cmd, shell):
    if isinstance(cmd, (list, tuple)):
        return [str(c) for c in cmd], False
    if shell or any(c in cmd for c in '|&;<>()$`*?'):
        return cmd, True
    return shlex.split(cmd), False


def errRun(*cmd, **kwargs):
    """Run a command on this machine; return (out, err, returncode).
    stderr=subprocess.STDOUT folds err into out, as in Mininet."""
    stderr = kwargs.get('stderr', subprocess.PIPE)
    shell = kwargs.get('shell', False)
    echo = kwargs.get('echo', False)
    if len(cmd) == 1:
        cmd = cmd[0]
    if echo:
        debug(cmd, '\n')
    argv, useShell = _argv(cmd, shell)
    try:
        p = subprocess.Popen(argv, shell=useShell, stdout=subprocess.PIPE,
                             stderr=stderr, stdin=subprocess.DEVNULL)
    except OSError as e:
        return '', str(e), 127
    out, err = p.communicate()
    return decode(out or b''), decode(err or b''), p.returncode


def errFail(*cmd, **kwargs):
    "errRun, raising when the command fails."
    out, err, ret = errRun(*cmd, **kwargs)
    if ret:
        raise Exception("errFail: %s failed with return code %s: %s"
                        % (cmd, ret, err))
    return out, err, ret


def quietRun(cmd, **kwargs):
    "Run a command, returning its output and error output together."
    return errRun(cmd, stderr=subprocess.STDOUT, **kwargs)[0]


def run(cmd):
    "Run a command, returning its output."
    return errRun(cmd)[0]


def checkRun(cmd):
    "Run cmd (split at spaces), raising CalledProcessError if it fails."
    return subprocess.check_call(cmd.split(' '))


def which(cmd, **kwargs):
    "The path of cmd on PATH, or None, as Mininet's which."
    out = quietRun(['which', cmd], **kwargs).strip()
    return out or None


def retry(retries, delaySecs, fn, *args, **keywords):
    """Call fn until it returns something true, at most retries+1 times,
    delaySecs apart; exit (as Mininet does) once the retries ran out."""
    tries = 0
    while not fn(*args, **keywords) and tries < retries:
        time.sleep(delaySecs)
        tries += 1
    if tries >= retries:
        error('*** gave up after %i retries\n' % tries)
        sys.exit(1)


def isShellBuiltin(cmd):
    "Is cmd's first word a bash builtin?"
    builtins = ('cd echo printf kill wait jobs export set unset read '
                'source exit true false test type alias').split()
    words = cmd.split()
    return bool(words) and words[0] in builtins


def pmonitor(popens, timeoutms=500, readline=True, readmax=1024):
    """Watch a dict {host: Popen} and yield (host, output) as it comes
    (a line at a time, or up to readmax), (None, '') on a timeout, until
    every process's output has ended."""
    import codecs
    import fcntl
    poller = select.poll()
    fdToHost, decoders = {}, {}
    for host, popen in popens.items():
        fd = popen.stdout.fileno()
        fdToHost[fd] = host
        decoders[fd] = codecs.getincrementaldecoder('utf-8')('replace')
        poller.register(fd, select.POLLIN)
        fcntl.fcntl(fd, fcntl.F_SETFL,
                    fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
    while popens:
        fds = poller.poll(timeoutms)
        if not fds:
            yield None, ''
            continue
        for fd, event in fds:
            host = fdToHost[fd]
            popen = popens[host]
            if event & (select.POLLIN | select.POLLHUP):
                while True:
                    try:
                        data = (popen.stdout.readline() if readline
                                else popen.stdout.read(readmax))
                    except IOError:
                        data = b''
                    line = decoders[fd].decode(data or b'')
                    if line == '':
                        break
                    yield host, line
            if event & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                poller.unregister(fd)
                del popens[host]


def waitListening(client=None, server='127.0.0.1', port=80, timeout=None):
    """Wait until something listens on server:port, seen from client (a
    node, or this machine when None): True, or False after timeout s.
    bash's /dev/tcp tries the connection (no telnet or nc needed)."""
    runCmd = client.cmd if client else (lambda c: quietRun(c, shell=True))
    serverIP = server if isinstance(server, BaseString) else server.IP()
    # telnet where there is one (as Mininet: servers such as iperf -s
    # then report the probe's connection, which scripts expect), else
    # bash's /dev/tcp.
    if runCmd('which telnet').strip():
        cmd, ok = 'echo A | telnet -e A %s %s' % (serverIP, port), 'Connected'
    else:
        cmd = ("bash -c 'exec 3<>/dev/tcp/%s/%s' >/dev/null 2>&1 && "
               "echo OPEN" % (serverIP, port))
        ok = 'OPEN'
    elapsed = 0.0
    while True:
        if ok in runCmd(cmd):
            return True
        if timeout is not None and elapsed >= timeout:
            error('could not connect to %s on port %d\n' % (server, port))
            return False
        debug('waiting for', server, 'to listen on port', port, '\n')
        info('.')
        time.sleep(.5)
        elapsed += .5


def dumpNodeConnections(nodes):
    "Print each node's interfaces and what they connect to."
    def dumpConnections(node):
        output(node.name)
        for intf in node.intfList():
            output(' %s:' % intf)
            if intf.link:
                intfs = [intf.link.intf1, intf.link.intf2]
                intfs.remove(intf)
                output(intfs[0])
            else:
                output(' ')
        output('\n')
    for node in nodes:
        dumpConnections(node)


def dumpNetConnections(net):
    "dumpNodeConnections of every node of net."
    dumpNodeConnections(net.controllers + net.switches + net.hosts)


def dumpPorts(switches):
    "Print each switch's ports."
    for switch in switches:
        output('%s ' % switch.name)
        for intf in switch.intfList():
            port = switch.ports[intf]
            output('%s:%d ' % (intf, port))
        output('\n')


def fixLimits():
    "Mininet raises file and process limits; hymn needs nothing here."


def ensureRoot():
    "Exit unless root, as Mininet does (hymn needs root too)."
    if os.getuid() != 0:
        print("*** Mininet must run as root.")
        sys.exit(1)


def moveIntf(intf, dstNode, printError=True, retries=3, delaySecs=0.001):
    raise NotImplementedError(
        'mininet.util.moveIntf: hymn moves interfaces with '
        'Intf(name, node=...) (an existing interface into a node)')


def mountCgroups():
    pass


def waitFor(*_args):
    pass


@functools.total_ordering
class StrictVersion(object):
    """A dotted version number ('1.10', '2.17.3') that compares by its
    numbers, as Mininet's util.StrictVersion (cluster.py compares Open
    vSwitch versions with it)."""

    def __init__(self, vstring):
        m = re.match(r'\s*(\d+(?:\.\d+)*)', str(vstring))
        if not m:
            raise ValueError('invalid version number %r' % (vstring,))
        self.vstring = str(vstring)
        self.version = tuple(int(x) for x in m.group(1).split('.'))

    def _key(self, other):
        if not isinstance(other, StrictVersion):
            other = StrictVersion(other)
        n = max(len(self.version), len(other.version))
        pad = lambda v: v + (0,) * (n - len(v))  # noqa: E731
        return pad(self.version), pad(other.version)

    def __eq__(self, other):
        a, b = self._key(other)
        return a == b

    def __lt__(self, other):
        a, b = self._key(other)
        return a < b

    def __hash__(self):
        return hash(self.version)

    def __str__(self):
        return self.vstring

    def __repr__(self):
        return 'StrictVersion(%r)' % self.vstring
