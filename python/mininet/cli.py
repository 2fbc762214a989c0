"""mininet.cli for hymn: the mininet> shell over a network of this script.

CLI(net) runs Mininet's commands on the script's own objects, so a
subclass's do_* methods work, and py/px run real Python with the
network's nodes in scope (net, h1, s1, ...).
"""

import os
import select
import subprocess
import sys
import time
from cmd import Cmd

from mininet.log import info, output, error
from mininet.util import quietRun, dumpNodeConnections, dumpPorts


class CLI(Cmd):
    "Mininet's command-line interface."

    prompt = 'mininet> '

    def __init__(self, mininet, stdin=sys.stdin, script=None, **kwargs):
        self.mn = mininet
        self.locals = {'net': mininet}
        # py/px run in the script's context: the globals of the first
        # caller outside this package (Mininet's use its own module's).
        frame = sys._getframe(1)
        while frame is not None and \
                frame.f_globals.get('__name__', '').startswith('mininet.') \
                and frame.f_globals.get('__name__') != 'mininet.examples':
            frame = frame.f_back
        self.scriptGlobals = frame.f_globals if frame is not None \
            else globals()
        self.inPoller = None
        self.inputFile = script
        Cmd.__init__(self, stdin=stdin, **kwargs)
        if stdin is not sys.stdin:
            self.use_rawinput = False
        info('*** Starting CLI:\n')
        if self.inputFile:
            self.do_source(self.inputFile)
            return
        self.initReadline()
        self.run()

    readlineInited = False

    @classmethod
    def initReadline(cls):
        if cls.readlineInited:
            return
        cls.readlineInited = True
        try:
            import readline  # noqa: F401 (line editing when interactive)
        except ImportError:
            pass

    def run(self):
        while True:
            try:
                if self.isatty():
                    quietRun('stty echo sane intr ^C')
                self.cmdloop()
                break
            except KeyboardInterrupt:
                output('\nInterrupt\n')

    def emptyline(self):
        pass

    def getLocals(self):
        self.locals.update(self.mn)
        return self.locals

    def isatty(self):
        return hasattr(self.stdin, 'isatty') and self.stdin.isatty()

    helpStr = (
        'You may also send a command to a node using:\n'
        '  <node> command {args}\n'
        'For example:\n'
        '  mininet> h1 ifconfig\n'
        '\n'
        'The interpreter automatically substitutes IP addresses\n'
        'for node names when a node is the first arg, so commands\n'
        'like\n'
        '  mininet> h2 ping h3\n'
        'should work.\n')

    def do_help(self, line):
        "Describe available CLI commands."
        Cmd.do_help(self, line)
        if line == '':
            output(self.helpStr)

    def do_nodes(self, _line):
        "List all nodes."
        nodes = ' '.join(sorted(self.mn))
        output('available nodes are: \n%s\n' % nodes)

    def do_ports(self, _line):
        "display ports and interfaces for each switch"
        dumpPorts(self.mn.switches)

    def do_net(self, _line):
        "List network connections."
        dumpNodeConnections(self.mn.values())

    def do_sh(self, line):
        "Run an external shell command"
        subprocess.call(line, shell=True)

    def do_py(self, line):
        """Evaluate a Python expression; node names are variables."""
        try:
            result = eval(line, self.scriptGlobals, self.getLocals())
            if result is None:
                return
            elif isinstance(result, str):
                output(result + '\n')
            else:
                output(repr(result) + '\n')
        except Exception as e:
            output(str(e) + '\n')

    def do_px(self, line):
        """Execute a Python statement; node names are variables."""
        try:
            exec(line, self.scriptGlobals, self.getLocals())
        except Exception as e:
            output(str(e) + '\n')

    def do_pingall(self, line):
        "Ping between all hosts."
        self.mn.pingAll(*line.split())

    def do_pingpair(self, _line):
        "Ping between first two hosts, useful for testing."
        self.mn.pingPair()

    def do_pingallfull(self, _line):
        "Ping between all hosts, returns all ping results."
        self.mn.pingAllFull()

    def do_pingpairfull(self, _line):
        "Ping between first two hosts, returns all ping results."
        self.mn.pingPairFull()

    def do_iperf(self, line):
        "Simple iperf TCP test between two (optionally specified) hosts."
        args = line.split()
        if not args:
            self.mn.iperf()
        elif len(args) == 2:
            hosts = []
            for arg in args:
                if arg not in self.mn:
                    error("node '%s' not in network\n" % arg)
                    return
                hosts.append(self.mn[arg])
            self.mn.iperf(hosts)
        else:
            error('invalid number of args: iperf src dst\n')

    def do_iperfudp(self, line):
        "Simple iperf UDP test between two (optionally specified) hosts."
        args = line.split()
        if not args:
            error('invalid number of args: iperfudp bw src dst\n' +
                  'bw examples: 10M\n')
            return
        udpBw = args[0]
        if len(args) == 1:
            self.mn.iperf(l4Type='UDP', udpBw=udpBw)
        elif len(args) == 3:
            hosts = [self.mn[a] for a in args[1:]]
            self.mn.iperf(hosts, l4Type='UDP', udpBw=udpBw)
        else:
            error('invalid number of args: iperfudp bw src dst\n' +
                  'bw examples: 10M\n')

    def do_intfs(self, _line):
        "List interfaces."
        for node in self.mn.values():
            output('%s: %s\n' % (node.name, ','.join(node.intfNames())))

    def do_dump(self, _line):
        "Dump node info."
        for node in self.mn.values():
            output('%s\n' % repr(node))

    def do_link(self, line):
        "Bring link(s) between two nodes up or down."
        args = line.split()
        if len(args) != 3:
            error('invalid number of args: link end1 end2 [up down]\n')
        elif args[2] not in ['up', 'down']:
            error('invalid type: link end1 end2 [up down]\n')
        else:
            self.mn.configLinkStatus(*args)

    def do_links(self, _line):
        "Report on links"
        for link in self.mn.links:
            output(link, link.status(), '\n')

    def do_xterm(self, _line, term='xterm'):
        "Spawn xterm(s) for the given node(s)."
        error('xterm: hymn has no X terminals; use hymn exec NODE\n')

    do_x = do_gterm = do_xterm

    def do_exit(self, _line):
        "Exit"
        assert self
        return 'exited by user command'

    def do_quit(self, line):
        "Exit"
        return self.do_exit(line)

    def do_EOF(self, line):
        "Exit"
        output('\n')
        return self.do_exit(line)

    def do_noecho(self, line):
        "Run an interactive command with echoing turned off."
        if self.isatty():
            quietRun('stty -echo')
        self.default(line)
        if self.isatty():
            quietRun('stty echo')

    def do_source(self, line):
        "Read commands from an input file."
        args = line.split()
        if len(args) != 1:
            error('usage: source <file>\n')
            return
        try:
            with open(args[0]) as f:
                for cmdline in f:
                    cmdline = cmdline.strip()
                    if cmdline:
                        output('*** %s\n' % cmdline)
                        self.onecmd(cmdline)
        except IOError:
            error('error reading file %s\n' % args[0])

    def do_dpctl(self, line):
        "Run dpctl (ovs-ofctl) command on all switches."
        args = line.split()
        if len(args) < 1:
            error('usage: dpctl command [arg1] [arg2] ...\n')
            return
        for sw in self.mn.switches:
            output('*** ' + sw.name + ' ' + ('-' * 72) + '\n')
            output(sw.dpctl(*args))

    def do_time(self, line):
        "Measure time taken for any command in Mininet."
        start = time.time()
        self.onecmd(line)
        elapsed = time.time() - start
        self.stdout.write("*** Elapsed time: %0.6f secs\n" % elapsed)

    def do_switch(self, line):
        "Starts or stops a switch"
        error('switch: hymn cannot stop or restart one switch; use link '
              'end1 end2 down\n')

    def do_wait(self, _line):
        "Wait until all switches have connected to a controller"
        self.mn.waitConnected()

    def default(self, line):
        """Called on an input line when the command prefix is not
        recognized: "node cmd args", node names replaced by IPs."""
        first, args, line = self.parseline(line)
        if first in self.mn:
            if not args:
                error('*** Please enter a command for node: %s <cmd>\n'
                      % first)
                return
            node = self.mn[first]
            rest = args.split(' ')
            hops = [self.mn[arg].defaultIntf().updateIP() or
                    self.mn[arg].IP() or arg
                    if arg in self.mn and self.mn[arg].defaultIntf()
                    else arg for arg in rest]
            node.sendCmd(' '.join(hops))
            self.waitForNode(node)
        else:
            error('*** Unknown command: %s\n' % line)

    def waitForNode(self, node):
        "Print the node's output until its command ends."
        nodePoller = select.poll()
        try:
            nodePoller.register(node.stdout)
        except (TypeError, ValueError):
            nodePoller = None
        isatty = self.isatty()
        while node.waiting:
            try:
                data = node.monitor(timeoutms=250)
                output(data)
            except KeyboardInterrupt:
                node.sendInt()
            except Exception as e:
                error('*** %s: %s\n' % (node.name, e))
                break

    def precmd(self, line):
        return line
