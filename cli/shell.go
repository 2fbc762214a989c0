package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
	"golang.org/x/term"
)

// Prompt is Mininet's prompt.
const Prompt = "mininet> "

// shell is the interactive mininet> command line. Like Mininet's CLI it
// prints command output through the log at output level (stderr) and the
// prompt on stdout.
type shell struct {
	net    *hymn.Network
	remote RemoteNetwork // instead of net: a network split over workers (remote_shell.go)
	lg     *mnlog.Logger
	stdout io.Writer
	intr   *interrupter

	// Nesting of source files and of command prefixes (time, noecho): each
	// level is Go stack, and a file that sources itself would recurse until
	// the stack overflows and the network is leaked.
	sourceDepth int
	prefixDepth int
	// unwinding is set when a source nested too deep: every enclosing
	// source stops reading instead of retrying the same recursion.
	unwinding bool

	// tcMode is --tc (emulator or kernel; empty: emulator), and
	// preparedShells the node shells that have hymn's tc first on PATH,
	// by node, as their pids (shell_tc.go).
	tcMode         string
	preparedShells map[string]int
}

// Limits on nesting, far above any real use.
const (
	maxSourceDepth = 16
	maxPrefixDepth = 8
	// maxLineLen bounds a command line read from the terminal, a pipe or
	// a source file (source /dev/zero must not eat memory).
	maxLineLen = 1 << 20
)

// prefixCommands are the commands that run the rest of the line as a
// command of its own.
var prefixCommands = map[string]bool{"time": true, "noecho": true}

// shellCommand is one command of the shell: its help line and its action.
// An action returns true to leave the shell.
type shellCommand struct {
	help string
	run  func(s *shell, ctx context.Context, args string) bool
}

var shellCommands map[string]shellCommand

func init() {
	shellCommands = map[string]shellCommand{
		"help":         {"Describe available CLI commands.", (*shell).doHelp},
		"nodes":        {"List all nodes.", (*shell).doNodes},
		"net":          {"List network connections.", (*shell).doNet},
		"links":        {"Report on links", (*shell).doLinks},
		"dump":         {"Dump node info.", (*shell).doDump},
		"intfs":        {"List interfaces.", (*shell).doIntfs},
		"ports":        {"display ports and interfaces for each switch", (*shell).doPorts},
		"pingall":      {"Ping between all hosts.", (*shell).doPingAll},
		"pingallfull":  {"Ping between all hosts, returns all ping results.", (*shell).doPingAllFull},
		"pingpair":     {"Ping between first two hosts, useful for testing.", (*shell).doPingPair},
		"pingpairfull": {"Ping between first two hosts, returns all ping results.", (*shell).doPingPairFull},
		"iperf":        {"Simple iperf TCP test between two (optionally specified) hosts.\nUsage: iperf node1 node2", (*shell).doIperf},
		"iperfudp":     {"Simple iperf UDP test between two (optionally specified) hosts.\nUsage: iperfudp bw node1 node2", (*shell).doIperfUDP},
		"link":         {"Bring link(s) between two nodes up or down.\nUsage: link node1 node2 [up/down]", (*shell).doLink},
		"sh":           {"Run an external shell command\nUsage: sh [cmd args]", (*shell).doSh},
		"time":         {"Measure time taken for any command in Mininet.", (*shell).doTime},
		"noecho":       {"Run an interactive command with echoing turned off.\nUsage: noecho [cmd args]", (*shell).doNoecho},
		"source":       {"Read commands from an input file.\nUsage: source <file>", (*shell).doSource},
		"wait":         {"Wait until all switches have connected to a controller", (*shell).doWait},
		"dpctl":        {"Run dpctl (or ovs-ofctl) command on all switches.\nUsage: dpctl command [arg1] [arg2] ...", (*shell).doDpctl},
		"switch":       {"Starts or stops a switch", (*shell).doSwitch},
		"xterm":        {"Spawn xterm(s) for the given node(s).\nUsage: xterm node1 node2 ...", (*shell).doXterm},
		"gterm":        {"Spawn gnome-terminal(s) for the given node(s).\nUsage: gterm node1 node2 ...", (*shell).doXterm},
		"x":            {"Create an X11 tunnel to the given node,\noptionally starting a client.\nUsage: x node [cmd args]", (*shell).doX},
		"py":           {"Evaluate Python expression.\nNode names may be used, e.g.: py h1.cmd('ls')", (*shell).doPy},
		"px":           {"Execute Python statement.\nNode names may be used, e.g.: px print h1.cmd('ls')", (*shell).doPx},
		"exit":         {"Exit", func(*shell, context.Context, string) bool { return true }},
		"quit":         {"Exit", func(*shell, context.Context, string) bool { return true }},
		"EOF":          {"Exit", func(s *shell, _ context.Context, _ string) bool { s.out("\n"); return true }},
	}
}

const helpStr = "You may also send a command to a node using:\n" +
	"  <node> command {args}\n" +
	"For example:\n" +
	"  mininet> h1 ifconfig\n" +
	"\n" +
	"The interpreter automatically substitutes IP addresses\n" +
	"for node names when a node is the first arg, so commands\n" +
	"like\n" +
	"  mininet> h2 ping h3\n" +
	"should work.\n" +
	"\n" +
	"Some character-oriented interactive commands require\n" +
	"noecho:\n" +
	"  mininet> noecho h2 vi foo.py\n" +
	"However, starting up an xterm/gterm is generally better:\n" +
	"  mininet> xterm h2\n\n"

func (s *shell) out(text string) { s.lg.Output(text) }

func (s *shell) outf(format string, args ...any) { s.lg.Outputf(format, args...) }

// historyFile is ~/.hymn_history.
func historyFile() string {
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return filepath.Join(home, ".hymn_history")
}

// runShell reads commands until exit, EOF or the context ends. A terminal
// gets line editing and history; a pipe or file is read line by line.
func (s *shell) runShell(ctx context.Context, in *os.File) {
	s.lg.Info("*** Starting CLI:\n")
	if term.IsTerminal(int(in.Fd())) {
		s.runTerminal(ctx, in)
		return
	}
	s.runLines(ctx, bufio.NewReader(in), true)
}

// runLines runs commands read from r; prompt says whether to print the
// prompt before each (interactive loop from a pipe, as Mininet does) and
// whether to strip comments (Mininet's precmd, interactive loop only).
func (s *shell) runLines(ctx context.Context, r *bufio.Reader, interactive bool) bool {
	for ctx.Err() == nil {
		if interactive {
			_, _ = fmt.Fprint(s.stdout, Prompt)
		}
		line, err := readCancellable(ctx, func() (string, error) { return readLine(r, maxLineLen) })
		if ctx.Err() != nil {
			return true
		}
		if errors.Is(err, errLineTooLong) {
			s.outf("*** Error: %v: stopped reading\n", err)
			return false
		}
		if line == "" && err != nil {
			if interactive {
				return s.onecmd(ctx, "EOF")
			}
			return false
		}
		line = strings.TrimRight(line, "\r\n")
		if interactive {
			line = stripComment(line)
		}
		if s.onecmd(ctx, line) {
			return true
		}
		if s.unwinding && !interactive {
			return false
		}
	}
	return true
}

// errLineTooLong is returned by readLine for a line over its limit.
var errLineTooLong = fmt.Errorf("command line longer than %d bytes", maxLineLen)

// readLine reads up to and including '\n', at most limit bytes.
func readLine(r *bufio.Reader, limit int) (string, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			return "", errLineTooLong
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return string(line), err
		}
	}
}

// readCancellable runs a blocking read in a goroutine of its own and
// gives up on it when ctx ends (SIGTERM, SIGHUP): a read from a terminal or
// pipe cannot be interrupted, and the network must be torn down anyway.
// The abandoned read ends with the process.
func readCancellable(ctx context.Context, read func() (string, error)) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := read()
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// ctrlCReader notes a Ctrl-C byte typed while the terminal is raw: x/term
// reports it as EOF, and only this tells it from Ctrl-D.
type ctrlCReader struct {
	r       io.Reader
	sawCtrl bool
}

func (c *ctrlCReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if slices.Contains(p[:n], 3) {
		c.sawCtrl = true
	}
	return n, err
}

func (s *shell) runTerminal(ctx context.Context, in *os.File) {
	fd := int(in.Fd())
	cr := &ctrlCReader{r: in}
	hist := loadHistory(historyFile())
	newTerminal := func() *term.Terminal {
		t := term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{cr, s.stdout}, Prompt)
		t.History = hist
		if w, h, err := term.GetSize(fd); err == nil {
			_ = t.SetSize(w, h) // a redraw on a fresh terminal: nothing drawn yet
		}
		return t
	}
	t := newTerminal()
	for ctx.Err() == nil {
		old, err := term.MakeRaw(fd)
		if err != nil {
			s.runLines(ctx, bufio.NewReader(in), true)
			return
		}
		cr.sawCtrl = false
		line, err := readCancellable(ctx, t.ReadLine)
		if err := term.Restore(fd, old); err != nil {
			s.outf("*** Error: restoring the terminal: %v\n", err)
		}
		if ctx.Err() != nil {
			s.out("\n")
			return
		}
		if errors.Is(err, io.EOF) && cr.sawCtrl {
			s.out("\nInterrupt\n")
			// x/term keeps the Ctrl-C it stopped at and would stop at it
			// again: start over with a fresh line editor (same history).
			t = newTerminal()
			continue
		}
		if err != nil {
			s.lg.Debugf("*** reading a line: %v\n", err)
			s.onecmd(ctx, "EOF")
			return
		}
		hist.save(line)
		if s.onecmd(ctx, stripComment(line)) {
			return
		}
	}
}

// stripComment drops everything from the first '#', as Mininet's precmd
// does (even inside quotes).
func stripComment(line string) string {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		return line[:i]
	}
	return line
}

// splitCommand splits a command line into the command's name and its
// arguments, as Python's cmd module does for Mininet (the name ends at the
// first space). ok is false for a blank line.
func splitCommand(line string) (name, args string, ok bool) {
	line = strings.TrimSpace(line)
	if line == "" {
		return "", "", false
	}
	name, args, _ = strings.Cut(line, " ")
	return name, strings.TrimSpace(args), true
}

// prefixChain counts the prefix commands (time, noecho) line starts with.
func prefixChain(line string) int {
	n := 0
	for {
		name, args, ok := splitCommand(line)
		if !ok || !prefixCommands[name] {
			return n
		}
		n++
		line = args
	}
}

// onecmd runs one command line and reports whether the shell should end.
func (s *shell) onecmd(ctx context.Context, line string) bool {
	name, args, ok := splitCommand(line)
	if !ok {
		return false // Mininet does not repeat the last command
	}
	if c, ok := s.commands()[name]; ok {
		return c.run(s, ctx, args)
	}
	if s.remote != nil {
		s.remoteOnecmd(ctx, name, args, line)
		return false
	}
	if _, err := s.net.Node(name); err == nil {
		if args == "" {
			s.outf("*** Please enter a command for node: %s <cmd>\n", name)
			return false
		}
		s.nodeCommand(ctx, name, args)
		return false
	}
	s.outf("*** Unknown command: %s\n", strings.TrimSpace(line))
	return false
}

// substituteNodes replaces each space-separated token that names a node by
// the address lookup gives for it, as Mininet's CLI does.
func substituteNodes(args string, lookup func(token string) (string, bool)) string {
	tokens := strings.Split(args, " ")
	for i, tok := range tokens {
		if addr, ok := lookup(tok); ok {
			tokens[i] = addr
		}
	}
	return strings.Join(tokens, " ")
}

// wantsIPv6 says whether a node command asks for IPv6 (ping6, or -6):
// on a dual-stack network its node names become IPv6 addresses.
func wantsIPv6(args string) bool {
	f := strings.Fields(args)
	if len(f) > 0 && (f[0] == "ping6" || f[0] == "traceroute6" || f[0] == "tracepath6") {
		return true
	}
	return slices.Contains(f, "-6")
}

// nodeCommand runs a command on a node with exact node-name tokens replaced
// by the node's IP, streaming its output; Ctrl-C interrupts it.
func (s *shell) nodeCommand(ctx context.Context, name, args string) {
	v6 := wantsIPv6(args)
	line := substituteNodes(args, func(tok string) (string, bool) {
		if v6 {
			if ip, err := s.net.IP6(tok); err == nil {
				return ip.String(), true
			}
		}
		if ip, err := s.net.IP(tok); err == nil {
			return ip.String(), true
		}
		if p := s.net.Plan().Node(tok); p != nil && p.IsSwitch() {
			// Mininet's switches answer with their default interface,
			// the loopback: keep its word-for-word substitution.
			return "127.0.0.1", true
		}
		return "", false
	})
	node, _ := s.net.Node(name)
	cctx, done := s.intr.commandContext(ctx)
	defer done()
	s.prepareNode(cctx, name, node)
	_, err := node.CmdStream(cctx, line, logWriter{s.lg})
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		s.out("\n")
	} else if err != nil && ctx.Err() == nil {
		s.outf("*** Error: %v\n", err)
	}
}

// logWriter passes streamed output to the log at output level.
type logWriter struct{ lg *mnlog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.lg.Output(string(p))
	return len(p), nil
}

func (s *shell) doHelp(_ context.Context, args string) bool {
	if args != "" {
		c, ok := s.commands()[args]
		if !ok {
			s.outf("*** No help on %s\n", args)
			return false
		}
		s.out(c.help + "\n")
		return false
	}
	var names []string
	for n := range s.commands() {
		names = append(names, n)
	}
	sort.Strings(names)
	s.out("\nDocumented commands (type help <topic>):\n========================================\n")
	s.out(columnize(names, 80))
	s.out("\n" + helpStr)
	return false
}

// columnize lays words out in columns, filled top to bottom, as Python's
// cmd module does for help.
func columnize(words []string, width int) string {
	if len(words) == 0 {
		return "<empty>\n"
	}
	for rows := 1; rows <= len(words); rows++ {
		cols := (len(words) + rows - 1) / rows
		widths := make([]int, cols)
		total := 0
		for c := range cols {
			for r := range rows {
				if i := c*rows + r; i < len(words) {
					widths[c] = max(widths[c], len(words[i]))
				}
			}
			total += widths[c]
		}
		total += 2 * (cols - 1)
		if total > width && rows < len(words) {
			continue
		}
		var b strings.Builder
		for r := range rows {
			var cells []string
			for c := range cols {
				if i := c*rows + r; i < len(words) {
					cells = append(cells, fmt.Sprintf("%-*s", widths[c], words[i]))
				}
			}
			b.WriteString(strings.TrimRight(strings.Join(cells, "  "), " ") + "\n")
		}
		return b.String()
	}
	return strings.Join(words, "\n") + "\n"
}

func (s *shell) doNodes(context.Context, string) bool {
	var names []string
	for _, n := range s.net.Plan().Nodes {
		names = append(names, n.Name)
	}
	names = append(names, s.net.ControllerNames()...) // shell_sdn.go
	sort.Strings(names)
	s.outf("available nodes are: \n%s\n", strings.Join(names, " "))
	return false
}

// orderedNodes is Mininet's net.values() order: hosts, then switches.
func (s *shell) orderedNodes() []*topo.PlannedNode {
	return append(s.net.Hosts(), s.net.Switches()...)
}

// intfNames lists a node's interfaces as Mininet shows them: switches
// first have their loopback (port 0).
func intfNames(n *topo.PlannedNode) []string {
	var out []string
	if n.IsSwitch() {
		out = append(out, "lo")
	}
	for _, i := range n.Intfs {
		out = append(out, i.Name)
	}
	return out
}

func (s *shell) doNet(context.Context, string) bool {
	s.out(netLines(s.orderedNodes()) + s.controllerNet())
	return false
}

// netLines is Mininet's net listing of nodes: each with its interfaces
// and what they connect to.
func netLines(nodes []*topo.PlannedNode) string {
	var b strings.Builder
	for _, n := range nodes {
		b.WriteString(n.Name)
		if n.IsSwitch() {
			b.WriteString(" lo: ")
		}
		for _, i := range n.Intfs {
			fmt.Fprintf(&b, " %s:%s", i.Name, i.Link.Peer(i).Name)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (s *shell) doLinks(context.Context, string) bool {
	var b strings.Builder
	for _, l := range s.net.Plan().Links {
		n1, _ := s.net.Node(l.Intf1.Node)
		n2, _ := s.net.Node(l.Intf2.Node)
		fmt.Fprintf(&b, "%s (%s %s) \n", l, links.Status(n1, l.Intf1.Name), links.Status(n2, l.Intf2.Name))
	}
	s.out(b.String())
	return false
}

// className is the Mininet class a node's repr shows.
func className(n *topo.PlannedNode) string {
	switch n.Kind {
	case topo.KindSwitch:
		return "LinuxBridge"
	case topo.KindRouter:
		return "LinuxRouter"
	}
	return "Host"
}

// nodeRepr is Mininet's repr of a node: <Host h1: h1-eth0:10.0.0.1 pid=123>.
func (s *shell) nodeRepr(n *topo.PlannedNode) string {
	var intfs []string
	if n.IsSwitch() {
		intfs = append(intfs, "lo:127.0.0.1")
	}
	for _, i := range n.Intfs {
		ip := "None"
		if i.IP.IsValid() {
			ip = i.IP.Addr().String()
		}
		intfs = append(intfs, i.Name+":"+ip)
	}
	pid := 0
	if node, err := s.net.Node(n.Name); err == nil {
		switch node := node.(type) {
		case interface{ ShellPid() (int, error) }: // namespace nodes: their shell
			pid, _ = node.ShellPid()
		case interface{ Pid() int }: // VMs: their QEMU
			pid = node.Pid()
		}
	}
	return fmt.Sprintf("<%s %s: %s pid=%d> ", s.classOf(n), n.Name, strings.Join(intfs, ","), pid)
}

func (s *shell) doDump(context.Context, string) bool {
	var b strings.Builder
	for _, n := range s.orderedNodes() {
		b.WriteString(s.nodeRepr(n) + "\n")
	}
	b.WriteString(s.controllerDump())
	s.out(b.String())
	return false
}

func (s *shell) doIntfs(context.Context, string) bool {
	var b strings.Builder
	for _, n := range s.orderedNodes() {
		fmt.Fprintf(&b, "%s: %s\n", n.Name, strings.Join(intfNames(n), ","))
	}
	b.WriteString(s.controllerIntfs())
	s.out(b.String())
	return false
}

func (s *shell) doPorts(context.Context, string) bool {
	var b strings.Builder
	for _, n := range s.net.Switches() {
		b.WriteString(n.Name + " lo:0")
		for _, i := range n.Intfs {
			fmt.Fprintf(&b, " %s:%d", i.Name, i.Port)
		}
		b.WriteString(" \n")
	}
	s.out(b.String())
	return false
}

// parseTimeout reads pingall's optional timeout in seconds.
func parseTimeout(args string) (time.Duration, error) {
	if args == "" {
		return 0, nil
	}
	var secs float64
	if _, err := fmt.Sscan(args, &secs); err != nil || secs <= 0 {
		return 0, fmt.Errorf("invalid timeout %q: give seconds, e.g. pingall 1", args)
	}
	return time.Duration(secs * float64(time.Second)), nil
}

// interruptible runs fn with a context Ctrl-C cancels and reports errors.
func (s *shell) interruptible(ctx context.Context, fn func(ctx context.Context) error) {
	cctx, done := s.intr.commandContext(ctx)
	defer done()
	if err := fn(cctx); err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() == nil {
			s.out("\nInterrupt\n")
			return
		}
		s.outf("*** Error: %v\n", err)
	}
}

func (s *shell) doPingAll(ctx context.Context, args string) bool {
	timeout, err := parseTimeout(args)
	if err != nil {
		s.outf("*** Error: %v\n", err)
		return false
	}
	s.interruptible(ctx, func(ctx context.Context) error { _, err := s.net.PingAll(ctx, timeout); return err })
	return false
}

func (s *shell) doPingAllFull(ctx context.Context, args string) bool {
	timeout, err := parseTimeout(args)
	if err != nil {
		s.outf("*** Error: %v\n", err)
		return false
	}
	s.interruptible(ctx, func(ctx context.Context) error { _, err := s.net.PingAllFull(ctx, timeout); return err })
	return false
}

func (s *shell) doPingPair(ctx context.Context, _ string) bool {
	s.interruptible(ctx, func(ctx context.Context) error { _, err := s.net.PingPair(ctx); return err })
	return false
}

func (s *shell) doPingPairFull(ctx context.Context, _ string) bool {
	s.interruptible(ctx, func(ctx context.Context) error { _, err := s.net.PingPairFull(ctx); return err })
	return false
}

// checkHosts reports Mininet's "node 'x' not in network" for unknown names.
func (s *shell) checkHosts(names ...string) bool {
	for _, n := range names {
		if _, err := s.net.Node(n); err != nil {
			s.outf("node '%s' not in network\n", n)
			return false
		}
	}
	return true
}

func (s *shell) doIperf(ctx context.Context, args string) bool {
	f := strings.Fields(args)
	switch len(f) {
	case 0:
		s.interruptible(ctx, func(ctx context.Context) error { _, err := s.net.Iperf(ctx, "", "", 0); return err })
	case 2:
		if s.checkHosts(f...) {
			s.interruptible(ctx, func(ctx context.Context) error { _, err := s.net.Iperf(ctx, f[0], f[1], 0); return err })
		}
	default:
		s.out("invalid number of args: iperf src dst\n")
	}
	return false
}

func (s *shell) doIperfUDP(ctx context.Context, args string) bool {
	f := strings.Fields(args)
	switch len(f) {
	case 1:
		s.interruptible(ctx, func(ctx context.Context) error { _, err := s.net.IperfUDP(ctx, f[0], "", "", 0); return err })
	case 3:
		if s.checkHosts(f[1:]...) {
			s.interruptible(ctx, func(ctx context.Context) error { _, err := s.net.IperfUDP(ctx, f[0], f[1], f[2], 0); return err })
		}
	default:
		s.out("invalid number of args: iperfudp bw src dst\nbw examples: 10M\n")
	}
	return false
}

func (s *shell) doLink(_ context.Context, args string) bool {
	f := strings.Fields(args)
	if len(f) != 3 {
		s.out("invalid number of args: link end1 end2 [up down]\n")
		return false
	}
	if f[2] != "up" && f[2] != "down" {
		s.out("invalid type: link end1 end2 [up down]\n")
		return false
	}
	for i, which := range []string{"src", "dst"} {
		if _, err := s.net.Node(f[i]); err != nil {
			s.outf("%s not in network: %s\n", which, f[i])
			return false
		}
	}
	if err := s.net.ConfigLinkStatus(f[0], f[1], f[2]); err != nil {
		s.outf("%v\n", err)
	}
	return false
}

func (s *shell) doSh(ctx context.Context, args string) bool {
	cctx, done := s.intr.commandContext(ctx)
	defer done()
	cmd := exec.CommandContext(cctx, "sh", "-c", args)
	cmd.Stdout, cmd.Stderr = logWriter{s.lg}, logWriter{s.lg}
	if o := s.net.OVS(); o != nil {
		// Mininet's sh ovs-vsctl show and sh ovs-ofctl dump-flows s1
		// reach the switches (the system's Open vSwitch there): here
		// they reach the network's own.
		cmd.Env = append(os.Environ(), o.Env()...)
	}
	// As Mininet's sh: the exit status is not reported; what the
	// command printed says what went wrong.
	_ = cmd.Run()
	return false
}

// enterPrefix counts one more prefix level for cmd, refusing the whole
// chain (before any of it runs) when it would nest too deep.
func (s *shell) enterPrefix(cmd, args string) bool {
	if s.prefixDepth+1+prefixChain(args) > maxPrefixDepth {
		s.outf("*** Error: %s: more than %d nested time/noecho prefixes\n", cmd, maxPrefixDepth)
		return false
	}
	s.prefixDepth++
	return true
}

func (s *shell) doTime(ctx context.Context, args string) bool {
	if !s.enterPrefix("time", args) {
		return false
	}
	defer func() { s.prefixDepth-- }()
	start := time.Now()
	s.onecmd(ctx, args)
	s.outf("*** Elapsed time: %0.6f secs\n", time.Since(start).Seconds())
	return false
}

func (s *shell) doNoecho(ctx context.Context, args string) bool {
	if !s.enterPrefix("noecho", args) {
		return false
	}
	defer func() { s.prefixDepth-- }()
	// Node commands never echo here: their shell has no terminal.
	return s.onecmd(ctx, args)
}

// runScript runs a --pre or --post script, announcing the CLI as Mininet
// does for every CLI it starts.
func (s *shell) runScript(ctx context.Context, path string) {
	s.lg.Info("*** Starting CLI:\n")
	s.doSource(ctx, path)
}

func (s *shell) doSource(ctx context.Context, args string) bool {
	path := strings.TrimSpace(args)
	if s.sourceDepth >= maxSourceDepth {
		s.outf("*** Error: source %s: nested more than %d deep (does a file source itself?)\n", path, maxSourceDepth)
		s.unwinding = true
		return false
	}
	// A FIFO or device would block in open or never end: only files.
	// O_NONBLOCK keeps the open of a FIFO from waiting for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		s.outf("error reading file %s\n", path)
		return false
	}
	defer func() { _ = f.Close() }() // read-only
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		s.outf("*** Error: source %s: not a regular file\n", path)
		return false
	}
	s.sourceDepth++
	defer func() {
		s.sourceDepth--
		if s.sourceDepth == 0 {
			s.unwinding = false
		}
	}()
	return s.runLines(ctx, bufio.NewReader(f), false)
}

func (s *shell) doWait(ctx context.Context, _ string) bool {
	s.interruptible(ctx, s.net.WaitConnected)
	return false
}

// doXterm opens a tmux window per node (the terminal most servers have);
// hymn does not tunnel X11.
func (s *shell) doXterm(_ context.Context, args string) bool {
	names := strings.Fields(args)
	if len(names) == 0 {
		s.out("usage: xterm node1 node2 ...\n")
		return false
	}
	for _, name := range names {
		if err := s.openTerminal(name, ""); err != nil {
			s.outf("*** %v\n", err)
		}
	}
	return false
}

func (s *shell) doX(_ context.Context, args string) bool {
	name, cmd, _ := strings.Cut(args, " ")
	if name == "" {
		s.out("usage: x node [cmd args]...\n")
		return false
	}
	if err := s.openTerminal(name, cmd); err != nil {
		s.outf("*** %v\n", err)
	}
	return false
}

func (s *shell) openTerminal(name, command string) error {
	node, err := s.net.Node(name)
	if err != nil {
		return fmt.Errorf("node %s not in network", name)
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		return errors.New("cannot open a terminal: hymn opens node terminals as tmux windows and tmux is not installed (apt-get install tmux); X11 xterms are not supported")
	}
	if os.Getenv("TMUX") == "" {
		return fmt.Errorf("cannot open a terminal for %s: run hymn inside tmux, and xterm opens a tmux window per node (or: ip netns exec %s bash)", name, node.Namespace())
	}
	args := []string{"new-window", "-n", "Node: " + name, "ip", "netns", "exec", node.Namespace()}
	// The node's environment, as its shell's here (hymn's tc first).
	shellCmd := "exec bash"
	if command != "" {
		shellCmd = command
	}
	if env, err := s.nodeShellEnv(name); err == nil {
		shellCmd = "export " + env + "; " + shellCmd
	}
	args = append(args, "sh", "-c", shellCmd)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("tmux new-window: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
