"""Tests of hymn's mininet package against a real hymn (root).

Run with: hymn python -m unittest discover -s python/tests -v
(the Go test pyapi.TestPythonSuite does, so go test ./... runs them).
Every test builds its own network and checks that nothing of it is left.
"""

import io
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from contextlib import contextmanager

import mininet
from mininet.net import Mininet
from mininet.topo import Topo, SingleSwitchTopo, LinearTopo
from mininet.topolib import TreeTopo, TreeNet
from mininet.node import (Host, Node, CPULimitedHost, LinuxBridge, OVSSwitch,
                          OVSBridge, Controller, OVSController, IVSSwitch,
                          NOX, Ryu, ShellError, RemoteController)
from mininet.nodelib import NAT
from mininet.link import TCLink, Link, Intf, HwPair
from mininet.cli import CLI
from mininet.log import setLogLevel, lg
from mininet.util import (quietRun, irange, custom, makeNumeric, pmonitor,
                          waitListening, dumpNodeConnections, numCores,
                          errRun, decode)
from mininet import _hymn

PYTHON = sys.executable


def namespacesOf(run):
    out = subprocess.run(['ip', 'netns', 'list'], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL,
                         universal_newlines=True).stdout
    return [l.split()[0] for l in out.splitlines() if run and run in l]


@contextmanager
def captured():
    "Mininet's log lines (stderr) and output() during the block."
    buf = io.StringIO()
    old = sys.stderr
    sys.stderr = buf
    try:
        yield buf
    finally:
        sys.stderr = old


class NetCase(unittest.TestCase):
    "Each test's networks are stopped and checked gone."

    def setUp(self):
        setLogLevel('info')
        self.nets = []

    def net(self, *args, **kwargs):
        kwargs.setdefault('switch', LinuxBridge)
        kwargs.setdefault('controller', None)
        with captured():
            n = Mininet(*args, **kwargs)
        self.nets.append(n)
        return n

    def tearDown(self):
        for n in self.nets:
            with captured():
                n.stop()
            if n.hymnRun:
                self.assertEqual(namespacesOf(n.hymnRun), [],
                                 'namespaces left after stop')


class TestBuild(NetCase):

    def test_lines_and_pingall(self):
        with captured() as out:
            net = Mininet(topo=SingleSwitchTopo(3), link=TCLink,
                          switch=LinuxBridge, controller=None)
            self.nets.append(net)
            net.start()
            loss = net.pingAll()
        text = out.getvalue()
        self.assertEqual(loss, 0)
        for line in ('*** Creating network', '*** Adding hosts:\nh1 h2 h3 ',
                     '*** Adding switches:\ns1 ',
                     '*** Adding links:\n(h1, s1) (h2, s1) (h3, s1) ',
                     '*** Configuring hosts\nh1 h2 h3 ',
                     '*** Starting 1 switches\ns1 ',
                     'h1 -> h2 h3 \nh2 -> h1 h3 \nh3 -> h1 h2 \n',
                     '*** Results: 0% dropped (6/6 received)'):
            self.assertIn(line, text)

    def test_nodes_and_addresses(self):
        net = self.net(topo=LinearTopo(3))
        net.start()
        self.assertEqual([h.name for h in net.hosts], ['h1', 'h2', 'h3'])
        self.assertEqual([s.name for s in net.switches], ['s1', 's2', 's3'])
        h1 = net['h1']
        self.assertIs(net.get('h1'), h1)
        self.assertIs(net.getNodeByName('h1'), h1)
        self.assertIn('h1', net)
        self.assertEqual(h1.IP(), '10.0.0.1')
        self.assertEqual(net['h3'].IP(), '10.0.0.3')
        self.assertRegex(h1.MAC(), r'^([0-9a-f]{2}:){5}[0-9a-f]{2}$')
        self.assertEqual(h1.intfNames(), ['h1-eth0'])
        self.assertEqual(str(h1.defaultIntf()), 'h1-eth0')
        self.assertEqual(h1.ports[h1.defaultIntf()], 0)
        self.assertEqual(net['s2'].intfNames(), ['lo', 's2-eth1', 's2-eth2',
                                                 's2-eth3'])
        conns = h1.connectionsTo(net['s1'])
        self.assertEqual([(str(a), str(b)) for a, b in conns],
                         [('h1-eth0', 's1-eth1')])
        self.assertIn('10.0.0.1', h1.cmd('ip -4 addr show h1-eth0'))
        self.assertEqual(len(net.links), 5)
        with captured() as out:
            dumpNodeConnections(net.hosts)
        self.assertIn('h1 h1-eth0:s1-eth1', out.getvalue())

    def test_manual_build_and_ipbase(self):
        net = self.net(build=False, ipBase='192.168.7.0/24',
                       autoSetMacs=True)
        h1 = net.addHost('h1')
        h2 = net.addHost('h2', ip='192.168.7.50/24')
        s1 = net.addSwitch('s1')
        net.addLink(h1, s1)
        net.addLink('h2', 's1')
        with captured():
            net.start()
        self.assertEqual(h1.IP(), '192.168.7.1')
        self.assertEqual(h1.MAC(), '00:00:00:00:00:01')
        self.assertIn('1 received', h1.cmd('ping -c1 -W2 192.168.7.50'))

    def test_autostaticarp(self):
        net = self.net(topo=SingleSwitchTopo(2), autoStaticArp=True)
        net.start()
        self.assertIn(net['h2'].MAC(), net['h1'].cmd('ip neigh show'))


class TestShell(NetCase):

    def setUp(self):
        NetCase.setUp(self)
        self.n = self.net(topo=SingleSwitchTopo(2))
        self.n.start()
        self.h1, self.h2 = self.n['h1'], self.n['h2']

    def test_cmd_in_namespace(self):
        out = self.h1.cmd('ip -o link show | grep -c eth0')
        self.assertEqual(out.strip(), '1')
        self.assertIn('1 received', self.h1.cmd('ping -c1', self.h2.IP()))
        self.assertEqual(self.h1.cmd('echo', 'a', 'b'), 'a b\r\n')

    def test_send_wait_monitor_int(self):
        h1 = self.h1
        h1.sendCmd('sleep 30')
        self.assertTrue(h1.waiting)
        self.assertEqual(h1.monitor(timeoutms=200), '')
        self.assertTrue(h1.waiting)
        h1.sendInt()
        t0 = time.time()
        h1.waitOutput()
        self.assertLess(time.time() - t0, 5)
        self.assertFalse(h1.waiting)
        h1.sendCmd('echo one; sleep 0.2; echo two')
        self.assertEqual(h1.waitOutput(), 'one\r\ntwo\r\n')

    def test_background_pid(self):
        self.h1.cmd('sleep 60 &')
        pid = self.h1.lastPid
        self.assertIsInstance(pid, int)
        self.assertTrue(os.path.exists('/proc/%d' % pid))
        self.h1.cmd('kill %d' % pid)

    def test_read_write_readline(self):
        h1 = self.h1
        h1.write('echo hello-from-write\n')
        line = None
        while line is None:
            line = h1.readline()
        self.assertEqual(line.strip(), 'hello-from-write')
        h1.waiting = True  # the prompt is still to come (or buffered)
        h1.waitOutput()
        self.assertEqual(h1.cmd('echo after'), 'after\r\n')

    def test_popen_pmonitor(self):
        popens = {self.h1: self.h1.popen('ping -c2 %s' % self.h2.IP()),
                  self.h2: self.h2.popen(['sh', '-c', 'echo $PPID; exit 3'])}
        lines = {}
        for host, line in pmonitor(dict(popens), timeoutms=500):
            if host:
                lines.setdefault(host.name, []).append(line)
        self.assertTrue(any('2 received' in l for l in lines['h1']))
        self.assertEqual(popens[self.h2].wait(), 3)
        out, err, code = self.h1.pexec('ip -o link show h1-eth0')
        self.assertEqual(code, 0)
        self.assertIn('h1-eth0', out)

    def test_popen_signal(self):
        p = self.h1.popen('sleep 60')
        time.sleep(0.2)
        p.send_signal(signal.SIGTERM)
        self.assertEqual(p.wait(timeout=5), -signal.SIGTERM)

    def test_dead_shell_errors(self):
        self.h1.sendCmd('exit')
        with self.assertRaises(ShellError):
            self.h1.waitOutput()
        t0 = time.time()
        with self.assertRaises(ShellError):
            self.h1.cmd('echo never')
        self.assertLess(time.time() - t0, 2)

    def test_root_namespace_node(self):
        n = Node('r0', inNamespace=False)
        out = n.cmd('ip -o link show lo')
        self.assertIn('lo', out)
        n.terminate()


class TestLinks(NetCase):

    def rtt(self, host, ip):
        out = host.cmd('ping -c3 -i0.2', ip)
        m = re.search(r'= [\d.]+/([\d.]+)/', out)
        return float(m.group(1)) if m else None

    def test_tclink_params_and_live_config(self):
        with captured() as out:
            net = self.net(topo=SingleSwitchTopo(2), link=TCLink)
            net.addLink  # noqa
        net = self.net(build=False, link=TCLink)
        h1, h2 = net.addHost('h1'), net.addHost('h2')
        s1 = net.addSwitch('s1')
        with captured() as out:
            l1 = net.addLink(h1, s1, bw=10, delay='15ms')
            net.addLink(h2, s1)
        self.assertIn('(10.00Mbit 15ms delay) (10.00Mbit 15ms delay) ',
                      out.getvalue())
        net.start()
        rtt = self.rtt(h1, h2.IP())
        self.assertGreater(rtt, 29)  # 15 ms each way on h1's link
        with captured() as out:
            l1.intf1.config(delay='40ms')
        self.assertIn('(40ms delay) ', out.getvalue())
        rtt2 = self.rtt(h1, h2.IP())
        self.assertGreater(rtt2, 54)  # 40 out + 15 back
        self.assertLess(rtt2, 200)

    def test_link_status(self):
        net = self.net(topo=SingleSwitchTopo(2))
        net.start()
        net.configLinkStatus('h1', 's1', 'down')
        self.assertNotIn(' 1 received',
                         net['h1'].cmd('ping -c1 -W1 10.0.0.2'))
        net.configLinkStatus('h1', 's1', 'up')
        self.assertEqual(net.ping([net['h1'], net['h2']], timeout=2), 0)
        with captured() as out:
            net.configLinkStatus('h1', 'h2', 'down')
        self.assertIn('not connected', out.getvalue())

    def test_live_add(self):
        net = self.net(topo=SingleSwitchTopo(2))
        net.start()
        h3 = net.addHost('h3')
        net.addLink(h3, net['s1'])
        self.assertEqual(h3.IP(), '10.0.0.3')
        self.assertIn('1 received', h3.cmd('ping -c1 -W2 10.0.0.1'))
        self.assertEqual(net.pingAll(), 0)

    def test_live_delete(self):
        net = self.net(topo=SingleSwitchTopo(3))
        net.start()
        h1, h2, h3, s1 = net['h1'], net['h2'], net['h3'], net['s1']
        link = net.linksBetween(h2, s1)[0]
        net.delLink(link)
        self.assertNotIn(link, net.links)
        self.assertNotIn('h2-eth0', h2.intfNames())
        self.assertNotIn('s1-eth2', s1.intfNames())
        self.assertNotIn('h2-eth0', h2.cmd('ip -o link show'))
        self.assertNotIn(' 1 received', h1.cmd('ping -c1 -W1 10.0.0.2'))
        net.addLink(h2, s1)
        self.assertIn('1 received', h1.cmd('ping -c1 -W2 10.0.0.2'))
        # delHost: its links go with it, and its namespace.
        net.delHost(h3)
        self.assertNotIn(h3, net.hosts)
        self.assertNotIn('h3', net)
        self.assertEqual(len(net.links), 2)
        self.assertNotIn('s1-eth3', s1.intfNames())
        self.assertEqual(net.pingAll(), 0)
        # delLinkBetween with Intf.delete's peer semantics.
        net.linksBetween(h1, s1)[0].intf1.delete()
        self.assertEqual(len(net.linksBetween(h1, s1)), 0)
        with captured() as out:
            net.pingAll()
        self.assertIn('h1 -> X', out.getvalue())

    def test_hwpair_existing_pair(self):
        """HwPair.available_pairs: hymn's existing-interface link moves the
        pair into the hosts under its own names, and gives it back to the
        host at stop."""
        a = 'hxp%da' % (os.getpid() % 100000)
        b = 'hxp%db' % (os.getpid() % 100000)
        subprocess.check_call(['ip', 'link', 'add', a, 'type', 'veth',
                               'peer', 'name', b])
        self.addCleanup(subprocess.call, ['ip', 'link', 'del', a],
                        stderr=subprocess.DEVNULL)
        HwPair.available_pairs = [(a, b)]
        self.addCleanup(setattr, HwPair, 'available_pairs', [])
        net = self.net()
        h1, h2 = net.addHost('h1'), net.addHost('h2')
        net.addLink(h1, h2, cls=HwPair)
        net.start()
        self.assertIn(a, h1.cmd('ip -o link show'))
        self.assertIn(b, h2.cmd('ip -o link show'))
        self.assertIn('1 received', h1.cmd('ping -c1 -W2 %s' % h2.IP()))
        self.assertNotIn(a, quietRun('ip -o link show'))
        with captured():
            net.stop()
        self.assertIn(a, quietRun('ip -o link show %s' % a))

    def test_ping_full_and_iperf(self):
        net = self.net(topo=SingleSwitchTopo(2))
        net.start()
        with captured() as out:
            full = net.pingAllFull()
        self.assertEqual(len(full), 2)
        src, dst, (sent, received, rmin, ravg, rmax, rdev) = full[0]
        self.assertEqual((src.name, dst.name, sent, received),
                         ('h1', 'h2', 1, 1))
        self.assertIn(' h1->h2: 1/1, rtt min/avg/max/mdev', out.getvalue())
        with captured() as out:
            res = net.iperf(seconds=1)
        self.assertEqual(len(res), 2)
        for r in res:
            self.assertRegex(r, r'^[\d.]+ [KMG]?bits/sec$')
        self.assertIn('*** Iperf: testing TCP bandwidth between h1 and h2',
                      out.getvalue())
        self.assertIn("*** Results: ['", out.getvalue())


class Recorder(object):
    calls = []


class MyHost(Host):
    def config(self, **params):
        r = Host.config(self, **params)
        Recorder.calls.append(('config', self.name, self.cmd('hostname -I'
                                                             ).strip()))
        return r


class MySwitch(LinuxBridge):
    def start(self, controllers):
        Recorder.calls.append(('start', self.name, len(controllers)))
        return LinuxBridge.start(self, controllers)


class MyTopo(Topo):
    def build(self, n=2):
        s = self.addSwitch('s1')
        for i in irange(1, n):
            self.addLink(self.addHost('h%d' % i), s)
        Recorder.calls.append(('build', n))


class MyCLI(CLI):
    def do_hello(self, line):
        "say hello"
        Recorder.calls.append(('hello', line))


class TestSubclasses(NetCase):

    def test_hooks_run_where_mininet_calls_them(self):
        Recorder.calls = []
        net = self.net(topo=MyTopo(n=2), host=MyHost, switch=MySwitch)
        self.assertEqual(Recorder.calls[0], ('build', 2))
        self.assertEqual(Recorder.calls[1][:2], ('config', 'h1'))
        self.assertIn('10.0.0.1', Recorder.calls[1][2])
        net.start()
        self.assertIn(('start', 's1', 0), Recorder.calls)

    def test_cli_script_and_do(self):
        Recorder.calls = []
        net = self.net(topo=SingleSwitchTopo(2))
        net.start()
        with tempfile.NamedTemporaryFile('w', suffix='.cli',
                                         delete=False) as f:
            f.write('hello world\npingall\npy net.hosts\n'
                    'px Recorder.calls.append(("px", h1.IP()))\n'
                    'h1 ping -c1 h2\nnodes\nnet\n')
        try:
            with captured() as out:
                MyCLI(net, script=f.name)
        finally:
            os.unlink(f.name)
        text = out.getvalue()
        self.assertIn(('hello', 'world'), Recorder.calls)
        self.assertIn('*** Results: 0% dropped (2/2 received)', text)
        self.assertIn('[<Host h1', text)
        self.assertIn('1 received', text)
        self.assertIn('available nodes are:', text)
        self.assertIn(('px', '10.0.0.1'), Recorder.calls)

    def test_controller_check_listening(self):
        class MyController(Controller):
            checked = []

            def checkListening(self):
                MyController.checked.append(self.name)
        net = self.net(topo=SingleSwitchTopo(2), switch=OVSSwitch,
                       controller=MyController)
        self.assertEqual(MyController.checked, ['c0'])
        net.start()
        self.assertEqual(net.pingAll(), 0)


class TestKinds(NetCase):

    def test_ovs_default_and_ovsbridge(self):
        with captured():
            net = Mininet(topo=SingleSwitchTopo(2))
        self.nets.append(net)
        net.start()
        # As Mininet's own tests do: on a busy machine the switch may
        # not have reached its controller yet.
        with captured():
            net.waitConnected()
        self.assertEqual(net.pingAll(), 0)
        self.assertEqual([c.name for c in net.controllers], ['c0'])

    def test_controller_per_switch(self):
        "controllers2.py's mid-level start: each switch its own controller."
        net = self.net(switch=OVSSwitch, controller=None, build=False)
        c1 = net.addController('c1', controller=OVSController, port=6633)
        c2 = net.addController('c2', controller=OVSController, port=6634)
        s1, s2 = net.addSwitch('s1'), net.addSwitch('s2')
        h1, h2 = net.addHost('h1'), net.addHost('h2')
        for a, b in ((h1, s1), (h2, s2), (s1, s2)):
            net.addLink(a, b)
        net.build()
        c1.start()
        c2.start()
        s1.start([c1])
        s2.start([c2])
        got = [quietRun('ovs-vsctl get-controller %s' % s).strip()
               for s in ('s1', 's2')]
        # As Mininet's switches show them (hymn relays to them).
        self.assertEqual(got, ['tcp:127.0.0.1:6633', 'tcp:127.0.0.1:6634'])
        with captured():
            net.waitConnected()
        self.assertEqual(net.pingAll(), 0)

    def test_ovsbridge(self):
        net = self.net(topo=SingleSwitchTopo(2), switch=OVSBridge)
        net.start()
        self.assertEqual(net.pingAll(), 0)

    def test_cpulimited(self):
        net = self.net(topo=SingleSwitchTopo(2),
                       host=custom(CPULimitedHost, cpu=0.2))
        net.start()
        with captured() as out:
            fr = net.runCpuLimitTest(cpu=0.2, duration=2)
        self.assertEqual(len(fr), 2)
        for f in fr:
            self.assertLess(f, 35)  # 20% of the machine, with slack
            self.assertGreater(f, 0)
        net['h1'].setCPUFrac(0.5)
        self.assertIn('*** Testing CPU 20% bandwidth limit', out.getvalue())

    def test_nat(self):
        # As Mininet's natnet.py: a built network, then its NAT.
        net = self.net(topo=SingleSwitchTopo(2))
        net.addNAT().configDefault()
        net.start()
        nat = net['nat0']
        self.assertIsInstance(nat, NAT)
        route = net['h1'].cmd('ip route show default')
        self.assertIn('via %s' % nat.IP(), route)

    def test_treenet(self):
        with captured():
            net = TreeNet(depth=2, fanout=2, switch=LinuxBridge,
                          controller=None)
        self.nets.append(net)
        net.start()
        self.assertEqual(len(net.hosts), 4)
        self.assertEqual(net.pingAll(), 0)


class TestRefusals(NetCase):

    def test_not_implemented(self):
        for cls in (IVSSwitch, NOX, Ryu):
            with self.assertRaises(NotImplementedError) as cm:
                cls('x1')
            self.assertIn(cls.__name__, str(cm.exception))
        with self.assertRaises(NotImplementedError):
            Mininet(xterms=True)
        net = self.net(topo=SingleSwitchTopo(2), switch=OVSSwitch,
                       controller=OVSController)
        net.start()
        with self.assertRaises(NotImplementedError) as cm:
            net.delController(net.controllers[0])
        self.assertIn('controller c0', str(cm.exception))
        # The network is whole after a refusal.
        self.assertIn('1 received', net['h1'].cmd('ping -c1 10.0.0.2'))

    def test_unknown_params_ignored(self):
        net = self.net(build=False)
        h1 = net.addHost('h1', cpus=2, memory='1G', frobnicate=3)
        h2 = net.addHost('h2')
        s1 = net.addSwitch('s1', whatever='x')
        net.addLink(h1, s1, sparkle=True)
        net.addLink(h2, s1)
        net.start()
        self.assertEqual(net.pingAll(), 0)


class TestUtil(unittest.TestCase):

    def test_helpers(self):
        self.assertEqual(list(irange(1, 3)), [1, 2, 3])
        self.assertEqual(makeNumeric('3'), 3)
        self.assertEqual(makeNumeric('0.5'), 0.5)
        self.assertEqual(quietRun('echo hi').strip(), 'hi')
        out, err, code = errRun('sh -c "echo e >&2; exit 4"')
        self.assertEqual((err.strip(), code), ('e', 4))
        self.assertGreaterEqual(numCores(), 1)
        self.assertEqual(decode(b'x'), 'x')
        lg.setLogLevel('output')
        setLogLevel('info')

    def test_path(self):
        out = subprocess.run([_hymn.hymnBinary(), 'python', '--path'],
                             stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.strip()
        self.assertTrue(os.path.isfile(os.path.join(out, 'mininet',
                                                    'net.py')))
        self.assertEqual(os.path.dirname(os.path.dirname(mininet.__file__)),
                         out)
        # A child python3 finds the same package (PYTHONPATH inherited).
        child = subprocess.run([PYTHON, '-c', 'import mininet; '
                                'print(mininet.HYMN)'],
                               stdout=subprocess.PIPE,
                               universal_newlines=True).stdout.strip()
        self.assertEqual(child, 'True')


SCRIPT = textwrap.dedent('''
    import sys, time
    from mininet.net import Mininet
    from mininet.topo import LinearTopo
    from mininet.node import LinuxBridge
    net = Mininet(topo=LinearTopo(3), switch=LinuxBridge, controller=None)
    net.start()
    net['h1'].cmd('true')
    net['h2'].sendCmd('sleep 600')
    p = net['h3'].popen('sleep 600')
    print(net.hymnRun, flush=True)
    if sys.argv[1] == 'raise':
        raise RuntimeError('boom')
    if sys.argv[1] == 'exit':
        sys.exit(0)
    time.sleep(600)
''')


class TestLifecycle(unittest.TestCase):

    def script(self, mode, env=None):
        f = tempfile.NamedTemporaryFile('w', suffix='.py', delete=False)
        f.write(SCRIPT)
        f.close()
        self.addCleanup(os.unlink, f.name)
        e = dict(os.environ)
        e.update(env or {})
        p = subprocess.Popen([PYTHON, f.name, mode], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL,
                             universal_newlines=True, env=e)
        run = p.stdout.readline().strip()
        self.assertTrue(run, 'the script printed no run id')
        self.assertTrue(namespacesOf(run))
        return p, run

    def gone(self, run, within=5.0):
        t0 = time.time()
        while time.time() - t0 < within:
            if not namespacesOf(run) and not self.procs(run):
                return time.time() - t0
            time.sleep(0.1)
        self.fail('run %s left %s and processes %s after %.0f s'
                  % (run, namespacesOf(run), self.procs(run), within))

    def procs(self, run):
        out = subprocess.run(['ps', '-eo', 'pid,args'],
                             stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        return [l for l in out.splitlines() if run in l]

    def test_kill9(self):
        p, run = self.script('sleep')
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        took = self.gone(run)
        sys.stderr.write('kill -9: nothing left after %.2f s\n' % took)

    def test_exception_and_exit(self):
        for mode in ('raise', 'exit'):
            p, run = self.script(mode)
            p.wait(timeout=60)
            self.gone(run)

    def test_keep_then_clean(self):
        p, run = self.script('exit', env={'HYMN_PY_KEEP': '1'})
        p.wait(timeout=60)
        time.sleep(1)
        self.assertTrue(namespacesOf(run), '--keep removed the network')
        subprocess.run([_hymn.hymnBinary(), 'clean'],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.gone(run, within=10)


if __name__ == '__main__':
    unittest.main()
