"""mininet.node for hymn: nodes are proxies for hymn's nodes.

Each node gets a real bash on a pseudo-terminal, entered with
"hymn exec" (namespace nodes), as Mininet's nodes get one through mnexec,
so cmd, sendCmd, waitOutput, monitor, sendInt, read, readline and write
behave as Mininet's do. The shell starts on first use, so a large network
costs no shells it does not use. A VM node's commands run in its guest
through hymn (the guest agent's persistent shell). popen() returns a real
subprocess.Popen started through "hymn exec".
"""

import codecs
import os
import pty
import re
import select
import signal
import subprocess
import termios
import threading
import fcntl

from mininet.log import info, error, warn, debug
from mininet.util import BaseString, isShellBuiltin, quietRun
from mininet import _hymn

SENTINEL = chr(127)

# The Mininet whose addHost/addSwitch is constructing a node right now.
_constructing = [None]


# Process groups of shells hung up by terminate(), for waitHungUp.
_hungUp = []


def waitHungUp(timeout=3.0):
    """Wait (at most timeout seconds) until every process of the shells
    terminate() hung up has ended: Mininet leaves them to finish, and a
    capture flushes its file on the hangup; hymn removes the nodes right
    after, which would kill them mid-write."""
    import time
    deadline = time.time() + timeout
    groups, _hungUp[:] = list(_hungUp), []
    while groups and time.time() < deadline:
        alive = []
        for pg in groups:
            try:
                os.killpg(pg, 0)
                alive.append(pg)
            except OSError:
                pass
        groups = alive
        if groups:
            time.sleep(0.02)


def _nodeEnv(node):
    """What hymn exec gives a node's commands, for those started without
    it (an OpenFlow switch's, in the switches' namespace): hymn's tc first
    on PATH, and the run and node it serves."""
    env = ['HYMN_RUN=' + node.net.hymnRun, 'HYMN_NODE=' + node.name]
    shim = os.environ.get('HYMN_PY_SHIM')
    if shim:
        env.append('PATH=%s:%s' % (shim, os.environ.get('PATH', '')))
    return env


def _popenInNode(node, cmd, popenArgs):
    """Popen of cmd in node through hymn exec, returned once cmd runs
    there: Mininet's mnexec enters a namespace in microseconds, so a
    server popen'ed just before its client is listening by the time the
    client connects; hymn exec takes milliseconds to start, so popen
    waits for it. hymn exec closes the ready pipe (close-on-exec) when it
    replaces itself with cmd, or when it fails."""
    r, w = os.pipe()
    popenArgs = dict(popenArgs)
    popenArgs['pass_fds'] = tuple(popenArgs.get('pass_fds', ())) + (w,)
    argv = [_hymn.hymnBinary(), 'exec', '--run', node.net.hymnRun,
            '--ready-fd', str(w), node.name, '--'] + cmd
    try:
        p = subprocess.Popen(argv, **popenArgs)
    finally:
        os.close(w)
    try:
        # Bounded: a hymn exec that cannot start must not hang the script.
        if select.select([r], [], [], 10)[0]:
            os.read(r, 1)
    finally:
        os.close(r)
    return p


def _jobsOf(groups):
    """{pid: (pgid, start ticks)} of the processes in the process groups
    groups, their leaders (the shells) left out."""
    jobs = {}
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        pgid, pid = int(fields[2]), int(d)
        if pgid in groups and pid != pgid:
            jobs[pid] = (pgid, int(fields[19]))
    return jobs


def _catchesHangup(pid):
    "Whether the process handles or ignores SIGHUP (bit 0 of the masks)."
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith(('SigCgt:', 'SigIgn:')) and \
                        int(line.split()[1], 16) & 1:
                    return True
    except (OSError, ValueError, IndexError):
        return True  # gone: nothing to wait for
    return False


def settleJobs(shells, young=1.0):
    """Before the shells are hung up, let background jobs that are
    still starting (younger than young seconds, not yet handling SIGHUP)
    start: a tcpdump -w started just before net.stop() has its file and
    its hangup handler within a fraction of a second. Mininet's stop
    takes that long before it reaches the hosts; hymn's is quicker."""
    import time
    groups = set(p for p in shells if p)
    if not groups:
        return
    tick = float(os.sysconf('SC_CLK_TCK'))
    deadline = time.time() + young
    while time.time() < deadline:
        with open('/proc/uptime') as f:
            now = float(f.read().split()[0])
        waiting = [pid for pid, (_, start) in _jobsOf(groups).items()
                   if now - start / tick < young and
                   not _catchesHangup(pid)]
        if not waiting:
            return
        time.sleep(0.02)


class ShellError(RuntimeError):
    "A node's shell died: the command could not run."


def _unsupported(what, instead):
    def fail(*_args, **_kwargs):
        raise NotImplementedError('%s is not supported by hymn: %s'
                                  % (what, instead))
    fail.__name__ = what.rsplit('.', 1)[-1]
    return fail


class Node(object):
    """A node: a namespace (or the root namespace with inNamespace=False)
    or, for VMHost, a VM; with Mininet's interface bookkeeping."""

    portBase = 0  # first port number (switches: 1)
    isSetup = False
    outToNode = {}
    inToNode = {}
    kind = 'host'  # hymn's node kind

    def __init__(self, name, inNamespace=True, **params):
        self.name = params.get('name', name)
        self.privateDirs = params.get('privateDirs', [])
        self.inNamespace = params.get('inNamespace', inNamespace)
        self.params = params
        self.intfs = {}  # port -> Intf
        self.ports = {}  # Intf -> port
        self.nameToIntf = {}
        # The Mininet adding us (its addHost/addSwitch is constructing us).
        self.net = _constructing[0]
        self.hymn = None  # hymn's NodeInfo once built
        self.waiting = False
        self.readbuf = ''
        self.lastCmd = None
        self.lastPid = None
        self.execed = False
        self._shell = None
        self._pid = None
        self._master = None
        self._stdout = None
        self._dead = False
        self._vmThread = None
        self._early = []  # commands given before the network was built
        if self.net is None and self.inNamespace:
            # Mininet's low-level API (Node('h0'), Link(h0, s0), no
            # Mininet object): the node joins the process's implicit
            # network, which hymn builds when a node first needs it.
            from mininet.net import implicitNet
            implicitNet().adoptNode(self)
        # Mininet's node shells start in the node's constructor, in the
        # script's directory then; hymn's start on first use, in that
        # same directory (./h2_output.pcap lands where Mininet puts it
        # even if the script changed directory since).
        self._cwd = os.getcwd()
        self._vmOutput = None

    # --- the shell -----------------------------------------------------

    @property
    def shell(self):
        "The shell's Popen (started on first use), or None once stopped."
        if self._shell is None and not self._dead:
            self.startShell()
        return self._shell

    @shell.setter
    def shell(self, value):
        self._shell = value

    @property
    def stdout(self):
        if self._shell is None and not self._dead:
            self.startShell()
        return self._stdout

    @stdout.setter
    def stdout(self, value):
        self._stdout = value

    stdin = stdout

    @property
    def pid(self):
        if self._pid is not None:
            return self._pid
        sh = self.shell
        return sh.pid if sh is not None else None

    @pid.setter
    def pid(self, value):
        self._pid = value

    @property
    def master(self):
        return self._master

    def _isVM(self):
        return self.hymn is not None and self.hymn.get('backend') == 'vm'

    def _shellArgv(self):
        # The shell's name is hymn:NODE, not Mininet's mininet:NODE: mn -c
        # (which Mininet's own tests run) kills every process whose command
        # line holds "mininet:", machine-wide, other networks' too.
        bash = ['env', 'PS1=' + SENTINEL, 'bash', '--norc', '--noediting',
                '-is', 'hymn:' + self.name]
        if self.hymn is not None and self.hymn.get('ownNamespace'):
            if self.privateDirs:
                # A mount namespace of the node's own, as Mininet's
                # mnexec makes, for its private directories.
                bash = ['unshare', '--mount', '--propagation',
                        'private'] + bash
            return [_hymn.hymnBinary(), 'exec', '--run', self.net.hymnRun,
                    self.name, '--'] + bash
        if self.hymn is not None and self.hymn.get('ovsDir'):
            # An OpenFlow switch: its shell is where its ports are, and
            # ovs-vsctl/ovs-ofctl there reach hymn's ovsdb-server.
            d = self.hymn['ovsDir']
            return ['ip', 'netns', 'exec', self.hymn['namespace'], 'env',
                    'OVS_RUNDIR=' + d, 'OVS_DBDIR=' + d,
                    'OVS_LOGDIR=' + d] + _nodeEnv(self) + bash
        return bash

    def _needNetwork(self):
        "A node in a namespace exists once its network is built."
        if not self.inNamespace and not isinstance(self, Switch):
            return
        if self.hymn is None and self.net is not None:
            # The node exists once hymn has it: a command before build()
            # (a router's sysctl) deploys what the script added so far,
            # and leaves Mininet's build() (configHosts) to start().
            self.net._ensureDeployed(why='%s.cmd()' % self.name)
            if self.hymn is None and self.net.deployed and \
                    self.net.nameToNode.get(self.name) is self:
                # Made after the build (the implicit network's nodes).
                self.net._deployNode(self)
            if self.hymn is None and self.net.deployed:
                raise ShellError('%s is not part of the network (was it '
                                 'added with addHost/addSwitch?)' % self.name)
        if self.hymn is None and self.net is None and self.inNamespace:
            raise NotImplementedError(
                '%s: a node outside a Mininet object (the low-level API of '
                "Mininet's scratchnet.py) is not supported by hymn: add it "
                'with Mininet.addHost/addSwitch' % self.name)
        if self.hymn is None and self.inNamespace:
            raise ShellError('%s is not part of a built network' % self.name)

    def startShell(self, mnopts=None):
        "Start the node's shell (a bash on a pty, in the node)."
        if self._shell is not None:
            error('%s: shell is already running\n' % self.name)
            return
        self._needNetwork()
        if self._isVM():
            # The guest's persistent shell, through hymn's agent.
            self._shell = _VMShell(self)
            self.waiting = False
            return
        master, slave = pty.openpty()

        def ctty():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)
        cwd = self._cwd if os.path.isdir(self._cwd) else None
        self._shell = subprocess.Popen(
            self._shellArgv(), stdin=slave, stdout=slave, stderr=slave,
            close_fds=True, preexec_fn=ctty, cwd=cwd)
        os.close(slave)
        self._master = master
        self._stdout = os.fdopen(master, 'r', closefd=False)
        self.pollOut = select.poll()
        self.pollOut.register(master, select.POLLIN | select.POLLHUP)
        self.outToNode[master] = self
        self.inToNode[master] = self
        self.readbuf = ''
        self.decoder = codecs.getincrementaldecoder('utf-8')('replace')
        # The first prompt says the shell is ready.
        out = ''
        while not out.endswith(SENTINEL):
            data = self.read(1024)
            if data == '' and self._dead:
                raise ShellError('%s: the shell did not start: %s'
                                 % (self.name, out.strip()))
            out += data
        self.waiting = False
        self.cmd('unset HISTFILE; stty -echo; set +m')
        for d in (self.hymn or {}).get('cgroups') or []:
            # A CPU-limited node's commands run in its cgroup.
            self.cmd('echo $$ > %s/cgroup.procs' % d)
        self.mountPrivateDirs()

    def _privateMounts(self):
        return bool(self.privateDirs) and not self._isVM() and \
            self.hymn is not None and self.hymn.get('ownNamespace')

    def mountPrivateDirs(self):
        """Mount the node's private directories in its mount namespace:
        (dir, source) binds source (with %(name)s made the node's name)
        on dir, a plain dir gets an empty tmpfs; other nodes and the
        machine keep seeing their own."""
        if not self._privateMounts():
            return
        for d in self.privateDirs:
            if isinstance(d, tuple):
                src = d[1] % self.__dict__
                self.cmd('mkdir -p %s %s && mount --bind %s %s'
                         % (src, d[0], src, d[0]))
            else:
                self.cmd('mkdir -p %s && mount -n -t tmpfs tmpfs %s'
                         % (d, d))

    def unmountPrivateDirs(self):
        "The mounts go with the node's mount namespace when it stops."

    def _shellDied(self):
        self._dead = True
        self.waiting = False

    def read(self, size=1024):
        """Up to size characters of the shell's output: what is buffered,
        else what the shell writes next (blocking until it does)."""
        if self._shell is None:
            self.shell
        if isinstance(self._shell, _VMShell):
            return self._shell.read()
        count = len(self.readbuf)
        if count < size and not (count and not self.pollOut.poll(0)):
            try:
                data = os.read(self._master, size - count)
            except OSError:
                data = b''
            if not data:
                self._shellDied()
            self.readbuf += self.decoder.decode(data)
        result = self.readbuf[:size]
        self.readbuf = self.readbuf[size:]
        return result

    def readline(self):
        """One line of the shell's output without its newline, or None
        when what was read holds no complete line (as Mininet's)."""
        self.readbuf += self.read(1024)
        if '\n' not in self.readbuf:
            return None
        pos = self.readbuf.find('\n')
        line = self.readbuf[:pos]
        self.readbuf = self.readbuf[pos + 1:]
        return line

    def write(self, data):
        "Write to the shell's terminal."
        if self._shell is None:
            self.shell
        if isinstance(self._shell, _VMShell):
            self._shell.write(data)
            return
        if self._dead:
            raise ShellError('%s: the shell has exited' % self.name)
        os.write(self._master, data.encode() if isinstance(data, str)
                 else data)

    def waitReadable(self, timeoutms=None):
        "Wait until output is ready (or timeoutms passes)."
        if self._shell is None:
            self.shell
        if isinstance(self._shell, _VMShell):
            return self._shell.waitReadable(timeoutms)
        if self.readbuf:
            return True
        if self._dead:
            return True
        return self.pollOut.poll(timeoutms)

    def terminate(self):
        """Stop the shell: SIGHUP to its process group, as Mininet's
        terminate sends, so its background jobs (tcpdump -w) end as they
        do on a hangup; Mininet.stop waits for them (waitHungUp)."""
        sh = self._shell
        if sh is not None and not isinstance(sh, _VMShell):
            try:
                os.killpg(sh.pid, signal.SIGHUP)
                _hungUp.append(sh.pid)
            except OSError:
                pass
            try:
                sh.wait(timeout=2)
            except subprocess.TimeoutExpired:
                sh.kill()
            if self._master is not None:
                self.outToNode.pop(self._master, None)
                self.inToNode.pop(self._master, None)
                try:
                    os.close(self._master)
                except OSError:
                    pass
        self._shell = None
        self._dead = True
        self.waiting = False

    def stop(self, deleteIntfs=False):
        """Stop the node (its shell); a node of the low-level API goes
        from hymn's network with its links, as Mininet's goes with its
        namespace."""
        self.terminate()
        net = self.net
        if net is not None and getattr(net, 'implicit', False) and \
                net.nameToNode.get(self.name) is self and \
                not getattr(self, '_leaving', False):
            self._leaving = True  # delNode stops the node too
            if net.deployed and self.hymn is not None:
                net.delNode(self)
            else:
                net.hosts.remove(self)
                net.nameToNode.pop(self.name, None)

    def cleanup(self):
        self.terminate()

    # --- commands --------------------------------------------------------

    def sendCmd(self, *args, **kwargs):
        """Send a command line to the shell and return at once;
        waitOutput() or monitor() collect the output."""
        printPid = kwargs.get('printPid', False)
        if self.shell is None:
            raise ShellError('%s: the shell has exited' % self.name)
        assert not self.waiting, '%s is still running %r' % (
            self.name, self.lastCmd)
        if len(args) == 1 and isinstance(args[0], list):
            cmd = args[0]
        else:
            cmd = args
        if not isinstance(cmd, str):
            cmd = ' '.join(str(c) for c in cmd)
        if not re.search(r'\w', cmd):
            cmd = 'echo -n'
        self.lastCmd = cmd
        if cmd.endswith('&'):
            cmd += ' printf "\\001%d\\012" $! '
        elif printPid and not isShellBuiltin(cmd):
            cmd = cmd + ' & printf "\\001%d\\012" $! ; wait'
        self.write(cmd + '\n')
        self.lastPid = None
        self.waiting = True

    def sendInt(self, intr=chr(3)):
        "Interrupt the running command (Ctrl-C on the node's terminal)."
        self.write(intr)

    def monitor(self, timeoutms=None, findPid=True):
        """Return the output available (waiting up to timeoutms); clears
        waiting when the command has finished."""
        if not self.waitReadable(timeoutms):
            return ''
        data = self.read(1024)
        if self._dead and not data:
            self.waiting = False
            return ''
        marker = chr(1) + r'\d+\r?\n'
        if findPid and chr(1) in data:
            data = re.sub(r'\[\d+\] \d+\r?\n', '', data)
            while not re.findall(marker, data) and not self._dead:
                data += self.read(1024)
            found = re.findall(marker, data)
            if found:
                self.lastPid = int(found[0][1:].strip())
                data = re.sub(marker, '', data)
        if SENTINEL in data:
            self.waiting = False
            data = data.replace(SENTINEL, '')
        return data

    def waitOutput(self, verbose=False, findPid=True):
        "Wait for the command to finish and return its output."
        log = info if verbose else debug
        out = ''
        while self.waiting:
            data = self.monitor(findPid=findPid)
            out += data
            log(data)
            if self._dead:
                self.waiting = False
                raise ShellError('%s: the shell died while running %r; '
                                 'output so far: %r'
                                 % (self.name, self.lastCmd, out))
        return out

    def cmd(self, *args, **kwargs):
        "Run a command line in the node's shell and return its output."
        verbose = kwargs.get('verbose', False)
        (info if verbose else debug)('*** %s : %s\n' % (self.name, args))
        if self.net is not None and self.net._constructing and \
                self._shell is None and self.kind != 'controller':
            # Mininet's nodes have shells from their constructor on; here
            # the node exists once the network is built, so a command
            # given before (a subclass's __init__) runs right after.
            self._early.append((args, kwargs))
            return ''
        if self._dead:
            raise ShellError('%s: the shell has exited; %r not run'
                             % (self.name, args))
        self.sendCmd(*args, **kwargs)
        return self.waitOutput(verbose)

    def cmdPrint(self, *args):
        return self.cmd(*args, **{'verbose': True})

    def popen(self, *args, **kwargs):
        """A subprocess.Popen of a command in the node (through hymn
        exec); stdout and stderr are pipes unless given."""
        defaults = {'stdout': subprocess.PIPE, 'stderr': subprocess.PIPE}
        defaults.update(kwargs)
        defaults.pop('mncmd', None)
        shell = defaults.pop('shell', False)
        if len(args) == 1:
            if isinstance(args[0], list):
                cmd = args[0]
            elif isinstance(args[0], BaseString):
                cmd = [args[0]] if shell else args[0].split()
            else:
                raise Exception('popen() requires a string or list')
        elif args:
            cmd = list(args)
        else:
            raise Exception('popen() requires a command')
        if shell:
            cmd = ['bash', '-c', ' '.join(str(c) for c in cmd)]
        cmd = [str(c) for c in cmd]
        self._needNetwork()
        if self._isVM():
            raise NotImplementedError(
                '%s.popen: VM nodes run commands through their shell; use '
                '%s.cmd() or sendCmd()/monitor()' % (self.name, self.name))
        if self.hymn is not None and self.hymn.get('ownNamespace'):
            cmd = self.popenPrefix() + cmd
            if self._privateMounts() and self.shell is not None:
                # In the node's mount namespace too (Mininet's mnexec -a).
                cmd = ['nsenter', '--mount=/proc/%d/ns/mnt'
                       % self.shell.pid, '--'] + cmd
            return _popenInNode(self, cmd, defaults)
        elif self.hymn is not None and self.hymn.get('ovsDir'):
            cmd = ['ip', 'netns', 'exec', self.hymn['namespace'],
                   'env'] + _nodeEnv(self) + cmd
        return subprocess.Popen(cmd, **defaults)

    def popenPrefix(self):
        "What a popen()ed command runs behind in the node (none here)."
        return []

    def pexec(self, *args, **kwargs):
        "popen, wait, return (out, err, exitcode) as strings."
        p = self.popen(*args, **kwargs)
        out, err = p.communicate()
        dec = lambda s: s.decode('utf-8', 'replace') if isinstance(
            s, bytes) else (s or '')
        return dec(out), dec(err), p.returncode

    # --- interfaces ------------------------------------------------------

    def newPort(self):
        "The next unused port number."
        if len(self.ports) > 0:
            return max(self.ports.values()) + 1
        return self.portBase

    def addIntf(self, intf, port=None, moveIntfFn=None):
        if port is None:
            port = self.newPort()
        self.intfs[port] = intf
        self.ports[intf] = port
        self.nameToIntf[intf.name] = intf
        debug('\n')
        debug('added intf %s (%d) to node %s\n' % (intf, port, self.name))

    def delIntf(self, intf):
        port = self.ports.get(intf)
        if port is not None:
            del self.intfs[port]
            del self.ports[intf]
            del self.nameToIntf[intf.name]

    def defaultIntf(self):
        ports = self.intfs.keys()
        if ports:
            return self.intfs[min(ports)]
        warn('*** defaultIntf: warning:', self.name, 'has no interfaces\n')
        return None

    def intf(self, intf=None):
        if not intf:
            return self.defaultIntf()
        if isinstance(intf, BaseString):
            return self.nameToIntf[intf]
        return intf

    def connectionsTo(self, node):
        connections = []
        for intf in self.intfList():
            link = intf.link
            if link:
                node1, node2 = link.intf1.node, link.intf2.node
                if node1 == self and node2 == node:
                    connections += [(intf, link.intf2)]
                elif node1 == node and node2 == self:
                    connections += [(intf, link.intf1)]
        return connections

    def deleteIntfs(self, checkName=True):
        for intf in list(self.intfs.values()):
            self.delIntf(intf)

    def intfList(self):
        return [self.intfs[p] for p in sorted(self.intfs.keys())]

    def intfNames(self):
        return [str(i) for i in self.intfList()]

    def linkTo(self, node, link=None):
        from mininet.link import Link
        return (link or Link)(self, node)

    # --- addresses -------------------------------------------------------

    def setARP(self, ip, mac):
        return self.cmd('arp', '-s', ip, mac)

    def setHostRoute(self, ip, intf):
        return self.cmd('route add -host', ip, 'dev', intf)

    def setDefaultRoute(self, intf=None):
        if isinstance(intf, BaseString) and ' ' in intf:
            params = intf
        else:
            params = 'dev %s' % intf
        self.cmd('ip route del default; ip route add default', params)

    def setMAC(self, mac, intf=None):
        return self.intf(intf).setMAC(mac)

    def setIP(self, ip, prefixLen=8, intf=None, **kwargs):
        return self.intf(intf).setIP(ip, prefixLen, **kwargs)

    def IP(self, intf=None):
        i = self.intf(intf)
        return i.IP() if i else None

    def MAC(self, intf=None):
        i = self.intf(intf)
        return i.MAC() if i else None

    def intfIsUp(self, intf=None):
        return self.intf(intf).isUp()

    def setParam(self, results, method, **param):
        name, value = list(param.items())[0]
        if value is None:
            return None
        f = getattr(self, method, None)
        if not f:
            return None
        if isinstance(value, list):
            result = f(*value)
        elif isinstance(value, dict):
            result = f(**value)
        else:
            result = f(value)
        results[name] = result
        return result

    def config(self, mac=None, ip=None, defaultRoute=None, lo='up',
               **_params):
        """Configure the node. hymn already gave it the ip, mac and
        default route of its parameters when it built the network; a
        subclass's config runs here, where Mininet calls it."""
        r = {}
        if defaultRoute and self.hymn is not None and self.inNamespace \
                and not self._isVM() and \
                not self.cmd('ip route show default').strip():
            # A node hymn made before its links (it ran a command before
            # build()) had no interface to route through then.
            self.setParam(r, 'setDefaultRoute', defaultRoute=defaultRoute)
        return r

    def configDefault(self, **moreParams):
        self.params.update(moreParams)
        # The default interface's address, as Mininet's config sets it
        # (hymn set it in the kernel when it built the node).
        ip, intf = self.params.get('ip'), self.intfs and self.defaultIntf()
        if ip and intf and intf.ip is None:
            ip = str(ip)
            intf.ip, intf.prefixLen = (ip.split('/') if '/' in ip
                                       else (ip, 8))
        self.config(**self.params)

    # --- what hymn needs --------------------------------------------------

    def hymnParams(self):
        "The node's parameters as hymn's topology takes them."
        out = {}
        for k, v in self.params.items():
            if k in ('cls', 'inNamespace', 'listenPort', 'name',
                     'privateDirs', 'isSwitch'):
                continue
            if v is None:
                if k == 'ip':
                    out['ip'] = 'none'
                continue
            if k == 'ip' and '/' not in str(v):
                v = '%s/%s' % (v, self.params.get('prefixLen', 8))
            if isinstance(v, bool):
                v = 'true' if v else 'false'
            if isinstance(v, (list, tuple)):
                v = ','.join(str(x) for x in v)
            if isinstance(v, dict):
                continue
            out[str(k)] = str(v)
        return out

    def __repr__(self):
        return '<%s %s: %s pid=%s> ' % (
            self.__class__.__name__, self.name,
            ','.join(['%s:%s' % (i.name, i.IP()) for i in self.intfList()]),
            self._shell.pid if self._shell is not None else None)

    def __str__(self):
        return self.name

    @classmethod
    def checkSetup(cls):
        pass

    @classmethod
    def setup(cls):
        pass


class _VMShell(object):
    """A VM node's shell: each command line goes to the guest's
    persistent shell through hymn; sendCmd runs it in a thread."""

    pid = None

    def __init__(self, node):
        self.node = node
        self.out = ''
        self.cond = threading.Condition()
        self.busy = False

    def write(self, data):
        if data == chr(3):
            return  # nothing to interrupt from here: the command runs on
        line = data.rstrip('\n')
        with self.cond:
            self.busy = True

        def run():
            try:
                res = self.node.net.conn.request('cmd', node=self.node.name,
                                                 line=line)
                text = res.get('output', '')
            except Exception as e:  # reported as the command's output
                text = 'hymn: %s\n' % e
            # The sentinel and pid markers as a local shell would print.
            with self.cond:
                self.out += text + SENTINEL
                self.busy = False
                self.cond.notify_all()
        threading.Thread(target=run, daemon=True).start()

    def read(self):
        with self.cond:
            while not self.out and self.busy:
                self.cond.wait(0.5)
            out, self.out = self.out, ''
            return out

    def waitReadable(self, timeoutms=None):
        with self.cond:
            if not self.out and self.busy:
                self.cond.wait(None if timeoutms is None or timeoutms < 0
                               else timeoutms / 1000.0)
            return bool(self.out) or not self.busy

    def poll(self):
        return None

    def wait(self, timeout=None):
        return 0


class Host(Node):
    "A host: a node in its own namespace."


class CPULimitedHost(Host):
    """A host in a cgroup with a CPU bandwidth limit (cpu=fraction of the
    machine), as Mininet's; hymn makes the cgroup. sched='cfs' limits it
    with the CFS bandwidth controller; sched='rt' runs its shell and
    popen()s under SCHED_RR (priority rtprio) and limits the group with
    the kernel's RT group scheduling (cgroup v1's cpu.rt_runtime_us, which
    kernels built with CONFIG_RT_GROUP_SCHED have), as Mininet does."""

    def __init__(self, name, sched='cfs', **params):
        Host.__init__(self, name, **params)
        if sched not in ('cfs', 'rt'):
            raise Exception("CPULimitedHost %s: sched=%r: use 'cfs' or 'rt'"
                            % (name, sched))
        self.sched = sched
        self.cpu = params.get('cpu', -1)
        self.cores = params.get('cores')
        self.period_us = params.get('period_us', 100000)
        self.rtprio = 20
        if sched == 'rt':
            self.checkRtGroupSched()

    _rtGroupSched = None

    @classmethod
    def checkRtGroupSched(cls):
        """RT group scheduling is cgroup v1's cpu controller with
        cpu.rt_runtime_us; without it a real-time host's limit could
        not be kept (CFS bandwidth does not apply to SCHED_RR tasks), so
        sched='rt' is refused, where Mininet exits."""
        if cls._rtGroupSched is None:
            cls._rtGroupSched = os.path.exists(
                '/sys/fs/cgroup/cpu/cpu.rt_runtime_us')
        if not cls._rtGroupSched:
            raise Exception(
                "CPULimitedHost(sched='rt') needs the kernel's RT group "
                'scheduling (cgroup v1 cpu controller with '
                'cpu.rt_runtime_us, CONFIG_RT_GROUP_SCHED), which this '
                "machine lacks: use sched='cfs'")

    def hymnParams(self):
        out = Host.hymnParams(self)
        for k in ('sched', 'period_us'):
            out.pop(k, None)
        cpu = self.params.get('cpu')
        if cpu is None or cpu == -1:
            out.pop('cpu', None)
        return out

    def config(self, cpu=-1, cores=None, **params):
        r = Host.config(self, **params)
        if self.sched == 'rt':
            # hymn built the cgroup with a CFS limit; Mininet's config
            # sets the RT one here.
            self.setCPUFrac(cpu, 'rt')
        return r

    def cgroupDir(self):
        "The cgroup directory with the CPU controller's files."
        for d in (self.hymn or {}).get('cgroups') or []:
            if '/cpuset/' not in d:
                return d
        return None

    def setCPUFrac(self, f, sched=None, period_us=None):
        """Change the CPU limit of a running host: f is the fraction of
        the whole machine (Mininet's rule), -1 for none (cfs)."""
        sched = sched or self.sched
        period_us = period_us or self.period_us
        if sched not in ('cfs', 'rt'):
            return
        if sched == 'rt' and (not f or f < 0):
            raise Exception('Please set a positive CPU fraction for sched=rt')
        if sched == 'rt':
            self.checkRtGroupSched()
        # The cgroup exists once hymn made the node (config() runs in
        # Mininet's build, which may come before hymn's).
        self._needNetwork()
        d = self.cgroupDir()
        if not d:
            raise NotImplementedError(
                '%s.setCPUFrac: the host has no cgroup: create it with a '
                'cpu= parameter (CPULimitedHost(cpu=0.5))' % self.name)
        if sched == 'rt':
            pstr, qstr, period, quota = self.rtInfo(f, period_us)
            # RT tasks ignore the CFS limit; Mininet leaves it unset.
            script = ('echo -1 > %s/cpu.cfs_quota_us; echo %d > %s/%s; '
                      'echo %d > %s/%s' % (d, period, d, pstr, quota, d,
                                           qstr))
        else:
            from mininet.util import numCores
            quota = -1 if f < 0 else max(1000, int(period_us * f *
                                                   numCores()))
            if os.path.exists(os.path.join(d, 'cpu.max')):
                script = 'echo "%s %d" > %s/cpu.max' % (
                    'max' if quota < 0 else quota, period_us, d)
            else:
                script = ('echo %d > %s/cpu.cfs_period_us; echo %d > '
                          '%s/cpu.cfs_quota_us' % (period_us, d, quota, d))
                if os.path.exists(os.path.join(d, 'cpu.rt_runtime_us')):
                    # Back from rt: the shell leaves SCHED_RR first, as
                    # the group may not keep RT tasks without runtime.
                    script = ('chrt -o -p 0 $$; echo 0 > %s/cpu.rt_runtime_us'
                              '; %s' % (d, script))
        # Written from the node's own shell, as Mininet's cgset is run.
        out = self.cmd(script + ' 2>&1')
        if out.strip():
            error('*** error: setCPUFrac: %s\n' % out.strip())
        if sched == 'rt':
            self.chrt()
        info('(%s %d/%dus) ' % (sched, quota, period_us))
        self.cpu = f

    def chrt(self):
        "The shell (and so what it runs) under SCHED_RR, as Mininet's."
        out = self.cmd('chrt -r -p %d $$ 2>&1 && chrt -p $$' % self.rtprio)
        if 'SCHED_RR' not in out:
            error('*** error: %s: chrt: %s\n' % (self.name, out.strip()))
            return 'cfs'
        return 'rt'

    def popenPrefix(self):
        """What a popen()ed command runs behind in this host: it joins
        the host's cgroups (Mininet's mnexec -g) and, with sched='rt',
        SCHED_RR (mnexec -r)."""
        dirs = (self.hymn or {}).get('cgroups') or []
        if not dirs:
            return []
        import shlex
        join = ' && '.join('echo $$ > %s' % shlex.quote(
            os.path.join(d, 'cgroup.procs')) for d in dirs)
        prefix = ['sh', '-c', join + ' && exec "$@"', 'sh']
        if self.sched == 'rt':
            prefix += ['chrt', '-r', str(self.rtprio)]
        return prefix

    def setCPUs(self, cores, mems=0):
        raise NotImplementedError(
            '%s.setCPUs: hymn pins CPU-limited hosts with the cores= '
            'parameter when it builds them' % self.name)

    def rtInfo(self, f, period_us=None):
        """RT bandwidth: runtime per period on each CPU (wall-clock), so
        the group gets f of the machine, as in Mininet."""
        period = period_us or self.period_us
        return 'cpu.rt_period_us', 'cpu.rt_runtime_us', period, \
            int(period * f)

    def cfsInfo(self, f):
        return 100000, int(100000 * f)

    @classmethod
    def init(cls):
        pass


class VMHost(Host):
    """CIMininet's VM host: a QEMU VM (TCG here) with cpus, cpupin,
    memory and cmdline parameters; its interfaces are hot-plugged."""

    def hymnParams(self):
        out = Host.hymnParams(self)
        out['backend'] = 'vm'
        return out


# ---------------------------------------------------------------- switches

class Switch(Node):
    "A switch; hymn decides the network's switch kind from the class."

    portBase = 1
    dpidLen = 16
    kind = 'switch'
    hymnKind = 'lxbr'

    def __init__(self, name, dpid=None, opts='', listenPort=None,
                 **params):
        Node.__init__(self, name, **params)
        self.dpid = self.defaultDpid(dpid)
        self.opts = opts
        self.listenPort = listenPort
        self.controlIntf = None
        if not self.inNamespace:
            # Mininet's switches outside a namespace list the loopback
            # as port 0, their control interface (intfs, net, ifconfig).
            from mininet.link import Intf
            self.controlIntf = Intf('lo', node=self, port=0)

    def defaultDpid(self, dpid=None):
        if dpid:
            dpid = dpid.replace(':', '')
        else:
            nums = re.findall(r'\d+', self.name)
            if not nums:
                raise Exception('Unable to derive default datapath ID - '
                                'please either specify a dpid or use a '
                                'canonical switch name such as s23.')
            dpid = hex(int(nums[0]))[2:]
        return '0' * (self.dpidLen - len(dpid)) + dpid

    def defaultIntf(self):
        if self.controlIntf is not None:
            return self.controlIntf
        return Node.defaultIntf(self) if self.intfs else None

    def sendCmd(self, *cmd, **kwargs):
        return Node.sendCmd(self, *cmd, **kwargs)

    def connected(self):
        return True

    def start(self, controllers):
        "hymn starts the switch; a subclass's start runs here."
        if self.net is not None:
            self.net._hymnStart()

    def stop(self, deleteIntfs=True):
        Node.stop(self)

    def hymnParams(self):
        out = Node.hymnParams(self)
        for k in ('opts', 'batch', 'inband', 'reconnectms', 'datapath',
                  'verbose'):
            out.pop(k, None)
        if self.params.get('dpid'):
            out['dpid'] = self.dpid
        return out

    def __repr__(self):
        return '<%s %s: %s pid=%s> ' % (
            self.__class__.__name__, self.name,
            ','.join(['%s:%s' % (i.name, i.IP()) for i in self.intfList()]),
            self._shell.pid if self._shell is not None else None)


class UserSwitch(Switch):
    "Mininet's user-space switch: an Open vSwitch OpenFlow switch here."
    hymnKind = 'ovsk'

    def __init__(self, name, dpopts='--no-slicing', **kwargs):
        Switch.__init__(self, name, **kwargs)


class OVSSwitch(Switch):
    "An Open vSwitch OpenFlow switch (userspace datapath in hymn)."
    hymnKind = 'ovsk'

    def __init__(self, name, failMode='secure', datapath='kernel',
                 inband=False, protocols=None, reconnectms=1000,
                 stp=False, batch=False, **params):
        Switch.__init__(self, name, **params)
        self.failMode = failMode
        self.datapath = datapath
        self.inband = inband
        self.protocols = protocols
        self.reconnectms = reconnectms
        self.stp = stp
        self._uuids = []
        self.batch = batch
        if stp:
            self.params['stp'] = True

    def hymnParams(self):
        out = Switch.hymnParams(self)
        if self.failMode:
            out['failMode'] = self.failMode
        if self.protocols:
            out['protocols'] = self.protocols
        return out

    def start(self, controllers):
        Switch.start(self, controllers)
        # hymn connects every switch to every controller; a switch
        # started with fewer (controllers2.py: s1.start([c1])) says which.
        # A controller the network does not run (a RemoteController made
        # for this switch alone, controllers.py) goes as its target.
        net = self.net
        if net is not None and self.hymnKind == 'ovsk':
            ours = [c.name for c in net.controllers]
            want = [c.name if c.name in ours else
                    'tcp:%s:%s' % (c.IP(), c.port) for c in controllers]
            if want != ours:
                net.conn.request('switchControllers', name=self.name,
                                 controllers=want)
        # Mininet asks OVS for its port numbers (ofport_request); hymn adds
        # ports in order, so only out-of-order numbers need asking.
        d = (self.hymn or {}).get('ovsDir')
        intfs = [i for i in self.intfList() if i.name != 'lo']
        if not d or all(self.ports[i] == n + 1 for n, i in
                        enumerate(intfs)):
            return
        argv = ['ip', 'netns', 'exec', self.hymn['namespace'], 'env',
                'OVS_RUNDIR=' + d, 'ovs-vsctl']
        for i in intfs:
            argv += ['--', 'set', 'Interface', i.name,
                     'ofport_request=%d' % self.ports[i]]
        quietRun(argv)

    def dpctl(self, *args):
        "Run ovs-ofctl on this switch."
        return self.cmd('ovs-ofctl', args[0], self, *args[1:])

    def vsctl(self, *args, **kwargs):
        return self.cmd('ovs-vsctl', *args)

    def attach(self, intf):
        """Make an interface in the switches' namespace a port of this
        switch (links added with net.addLink attach themselves; this is
        for scripts that move ports, as mobility.py does). hymn's view
        of the wiring (net, links) keeps the link where it was built."""
        self.vsctl('add-port', self, intf)
        self.cmd('ip link set', intf, 'up')

    def detach(self, intf):
        "Take a port out of this switch; the interface stays."
        self.vsctl('del-port', self, intf)

    @classmethod
    def batchStartup(cls, switches, run=None):
        return switches

    @classmethod
    def batchShutdown(cls, switches, run=None):
        return switches

    @classmethod
    def isOldOVS(cls):
        return False


OVSKernelSwitch = OVSSwitch


class OVSBridge(OVSSwitch):
    "Open vSwitch as a standalone learning bridge (no controller)."
    hymnKind = 'ovsbr'

    def __init__(self, *args, **kwargs):
        kwargs.update(failMode='standalone')
        OVSSwitch.__init__(self, *args, **kwargs)

    def start(self, controllers):
        return OVSSwitch.start(self, controllers=[])

    def connected(self):
        return True


class LinuxBridge(Switch):
    "A Linux bridge (hymn's lxbr switch), with stp as Mininet's."
    hymnKind = 'lxbr'
    nextPrio = 100

    def __init__(self, name, stp=False, prio=None, **kwargs):
        self.stp = stp
        if prio:
            self.prio = prio
        else:
            self.prio = LinuxBridge.nextPrio
            LinuxBridge.nextPrio += 1
        Switch.__init__(self, name, **kwargs)
        if stp:
            self.params['stp'] = True

    def hymnParams(self):
        out = Switch.hymnParams(self)
        out.pop('prio', None)
        return out

    def connected(self):
        return True


IVSSwitch = type('IVSSwitch', (Switch,), {
    '__init__': _unsupported('mininet.node.IVSSwitch',
                             'use OVSSwitch, OVSBridge or LinuxBridge')})


# ------------------------------------------------------------- controllers

class Controller(Node):
    """An OpenFlow controller: hymn runs it (Mininet's controller program
    is ovs-testcontroller on Debian) and connects the OVS switches."""

    kind = 'controller'
    hymnSpec = 'ref'

    def __init__(self, name, inNamespace=False, command='controller',
                 cargs='-v ptcp:%d', cdir=None, ip='127.0.0.1',
                 port=6653, protocol='tcp', **params):
        self.command = command
        self.cargs = cargs
        self.cdir = cdir
        if ':' in ip:
            ip, port = ip.split(':')
            port = int(port)
        self.ip = ip
        self.port = port
        self.protocol = protocol
        Node.__init__(self, name, inNamespace=inNamespace, ip=ip, **params)
        self.checkListening()

    def checkListening(self):
        "Mininet checks that nothing listens on the port; hymn does that."

    def start(self):
        "hymn starts the controller; a subclass's start runs here."
        if self.net is not None:
            self.net._hymnStart()

    def stop(self, *args, **kwargs):
        Node.stop(self)

    def IP(self, intf=None):
        return self.ip

    def hymnSpecString(self):
        # A port given by the script is kept (switches of a RemoteController
        # made for that port reach it, controllers.py); Mininet's default
        # 6653 is hymn's to place (the next free loopback address).
        if self.hymnSpec and self.port not in (None, 6653):
            return '%s,port=%d' % (self.hymnSpec, int(self.port))
        return self.hymnSpec

    def __repr__(self):
        return '<%s %s: %s:%s pid=%s> ' % (
            self.__class__.__name__, self.name, self.IP(), self.port,
            self._shell.pid if self._shell is not None else None)

    @classmethod
    def isAvailable(cls):
        return True


class OVSController(Controller):
    "Open vSwitch's test controller (ovs-testcontroller)."
    hymnSpec = 'ovsc'

    def __init__(self, name, **kwargs):
        kwargs.setdefault('command', 'ovs-testcontroller')
        Controller.__init__(self, name, **kwargs)


class RemoteController(Controller):
    "A controller hymn does not run: switches connect to ip:port."

    def __init__(self, name, ip='127.0.0.1', port=None, **kwargs):
        Controller.__init__(self, name, ip=ip, port=port or 6653, **kwargs)

    def start(self):
        pass

    def stop(self):
        pass

    def hymnSpecString(self):
        return 'remote,ip=%s,port=%s' % (self.ip, self.port)


class NullController(Controller):
    "A controller that runs nothing."

    def hymnSpecString(self):
        return None


NOX = type('NOX', (Controller,), {
    '__init__': _unsupported('mininet.node.NOX',
                             'use Controller, OVSController or '
                             'RemoteController')})
Ryu = type('Ryu', (Controller,), {
    '__init__': _unsupported('mininet.node.Ryu',
                             'run ryu-manager yourself and use '
                             'RemoteController')})

DefaultControllers = (Controller, OVSController)


def findController(controllers=DefaultControllers):
    return controllers[0]


def DefaultController(name, controllers=DefaultControllers, **kwargs):
    "Mininet's default controller class."
    return findController(controllers)(name, **kwargs)


class Docker(Host):
    def __init__(self, *args, **kwargs):
        raise NotImplementedError('mininet.node.Docker is not part of '
                                  'Mininet 2.3 nor hymn')
