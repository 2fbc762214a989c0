package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

// RemoteNetwork is a network the mininet> shell reaches only through
// commands run in its nodes: one split over workers (hymn cluster run
// --test cli, hymn-kube run), whose nodes live in other processes, pods or
// machines.
type RemoteNetwork interface {
	// Plan is the whole resolved topology: names, kinds, addresses.
	Plan() *topo.Plan
	// Run runs a shell command line in node, on whichever worker holds
	// it, writing what it prints (stdout and stderr) to out, and returns
	// its exit status. Cancelling ctx abandons it.
	Run(ctx context.Context, node, cmdline string, out io.Writer) (exit int, err error)
}

// remoteCommands are the shell commands that work through RemoteNetwork;
// the rest of Mininet's need the network in this process and say so. Made
// on first use: it copies entries of shellCommands, whose init may run
// after this file's.
var remoteCommands = sync.OnceValue(func() map[string]shellCommand {
	m := map[string]shellCommand{
		"nodes":    {shellCommands["nodes"].help, (*shell).doRemoteNodes},
		"net":      {shellCommands["net"].help, (*shell).doRemoteNet},
		"pingall":  {shellCommands["pingall"].help, (*shell).doRemotePingAll},
		"pingpair": {shellCommands["pingpair"].help, (*shell).doRemotePingPair},
	}
	for _, name := range []string{"help", "sh", "time", "noecho", "source", "exit", "quit", "EOF", "ui"} {
		m[name] = shellCommands[name]
	}
	return m
})

// WatchInterrupts routes SIGINT for a program that embeds the shell (as
// hymn's own commands do): Ctrl-C cancels the node command that runs, or
// the returned context when none does. Call stop when done.
func WatchInterrupts(ctx context.Context) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	in, unwatch := watchInterrupts(cancel)
	return withInterrupter(ctx, in), func() { unwatch(); cancel() }
}

// RunRemoteShell runs the mininet> shell over n until exit, EOF or the end
// of ctx: commands from in (a terminal gets line editing and history),
// their output to stderr at Mininet's output level, the prompt to stdout.
// Node commands have node names replaced by addresses, as in Mininet.
func RunRemoteShell(ctx context.Context, n RemoteNetwork, in *os.File, stdout, stderr io.Writer) {
	s := &shell{remote: n, lg: mnlog.New(stderr, mnlog.Info), stdout: stdout, intr: interrupterFrom(ctx)}
	s.runShell(ctx, in)
}

// commands is the table this shell answers from.
func (s *shell) commands() map[string]shellCommand {
	if s.remote != nil {
		return remoteCommands()
	}
	return shellCommands
}

// remoteOnecmd is onecmd's second half for a remote network: a node's
// command, or a word on what is not available.
func (s *shell) remoteOnecmd(ctx context.Context, name, args, line string) {
	if s.remote.Plan().Node(name) != nil {
		if args == "" {
			s.outf("*** Please enter a command for node: %s <cmd>\n", name)
			return
		}
		s.remoteNodeCommand(ctx, name, args)
		return
	}
	if _, ok := shellCommands[name]; ok {
		s.outf("*** %s is not available here: the network is split over workers, and this shell reaches its nodes only by running commands in them (<node> <cmd> works)\n", name)
		return
	}
	s.outf("*** Unknown command: %s\n", strings.TrimSpace(line))
}

// remoteAddress is what a node name becomes in a node command: a host's
// address, a switch's loopback (as for a local network).
func remoteAddress(n RemoteNetwork, tok string) (string, bool) {
	p := n.Plan().Node(tok)
	switch {
	case p == nil:
		return "", false
	case p.IsSwitch():
		return "127.0.0.1", true
	case p.IP.IsValid():
		return p.IP.Addr().String(), true
	}
	return "", false
}

func (s *shell) remoteNodeCommand(ctx context.Context, name, args string) {
	line := substituteNodes(args, func(tok string) (string, bool) { return remoteAddress(s.remote, tok) })
	cctx, done := s.intr.commandContext(ctx)
	defer done()
	_, err := s.remote.Run(cctx, name, line, logWriter{s.lg})
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		s.out("\n")
	} else if err != nil && ctx.Err() == nil {
		s.outf("*** Error: %v\n", err)
	}
}

func (s *shell) doRemoteNodes(context.Context, string) bool {
	var names []string
	for _, n := range s.remote.Plan().Nodes {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	s.outf("available nodes are: \n%s\n", strings.Join(names, " "))
	return false
}

func (s *shell) doRemoteNet(context.Context, string) bool {
	plan := s.remote.Plan()
	s.out(netLines(append(plan.Hosts(), plan.Switches()...)))
	return false
}

func (s *shell) doRemotePingAll(ctx context.Context, _ string) bool {
	s.remotePing(ctx, false)
	return false
}

func (s *shell) doRemotePingPair(ctx context.Context, _ string) bool {
	s.remotePing(ctx, true)
	return false
}

// remotePing is pingall (pingpair: pingpair), Ctrl-C interrupting it.
func (s *shell) remotePing(ctx context.Context, pair bool) {
	cctx, done := s.intr.commandContext(ctx)
	defer done()
	_, err := PingRemote(cctx, s.remote, pair, logWriter{s.lg})
	s.reportRemote(ctx, err)
}

func (s *shell) reportRemote(ctx context.Context, err error) {
	switch {
	case err == nil || ctx.Err() != nil:
	case errors.Is(err, context.Canceled):
		s.out("\n")
	default:
		s.outf("*** Error: %v\n", err)
	}
}

// PingRemote is pingall (pingpair: pingpair) over n, printing Mininet's
// lines to out: one ping at a time, each run in the source host. Lost
// pings are in the result; an error is the transport's (a worker gone).
func PingRemote(ctx context.Context, n RemoteNetwork, pair bool, out io.Writer) (*RemotePingAll, error) {
	hosts := n.Plan().Hosts()
	if pair {
		if len(hosts) < 2 {
			return nil, errors.New("pingpair needs two hosts")
		}
		hosts = hosts[:2]
	}
	logf := func(format string, a ...any) { _, _ = fmt.Fprintf(out, format, a...) }
	return pingMatrixRemote(ctx, hosts, func(ctx context.Context, src, dst string) (bool, error) {
		addr, ok := remoteAddress(n, dst)
		if !ok {
			return false, nil
		}
		code, err := n.Run(ctx, src, "ping -c1 -W1 "+addr, io.Discard)
		return err == nil && code == 0, err
	}, logf)
}

// RemotePingAll is pingall's result over a network split across workers.
type RemotePingAll struct {
	Sent     int      `json:"sent"`
	Received int      `json:"received"`
	Dropped  float64  `json:"dropped_pct"`
	Failed   []string `json:"failed,omitempty"` // "h1->h3"
}

// pingMatrixRemote pings every host from every other, one at a time, and
// prints Mininet's pingall lines; ping says whether one ping from src to
// dst came back. Lost pings are in the result; an error is the transport's.
func pingMatrixRemote(ctx context.Context, hosts []*topo.PlannedNode, ping func(ctx context.Context, src, dst string) (bool, error), logf func(string, ...any)) (*RemotePingAll, error) {
	res := &RemotePingAll{}
	logf("*** Ping: testing ping reachability\n")
	for _, src := range hosts {
		line := src.Name + " -> "
		for _, dst := range hosts {
			if dst == src {
				continue
			}
			res.Sent++
			ok, err := ping(ctx, src.Name, dst.Name)
			if err != nil {
				return res, err
			}
			if ok {
				res.Received++
				line += dst.Name + " "
			} else {
				res.Failed = append(res.Failed, src.Name+"->"+dst.Name)
				line += "X "
			}
		}
		logf("%s\n", line)
	}
	if res.Sent > 0 {
		res.Dropped = 100 * float64(res.Sent-res.Received) / float64(res.Sent)
	}
	logf("*** Results: %.0f%% dropped (%d/%d received)\n", res.Dropped, res.Received, res.Sent)
	return res, nil
}
