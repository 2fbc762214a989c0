// Command sdnlearning builds an OpenFlow network the way most Mininet users
// first meet one: Open vSwitch switches and ovs-testcontroller (Mininet's
// OVSController) as an L2 learning switch. It runs pingall, then shows
// what the controller taught the switches, as the shell's "dpctl
// dump-flows" does, and fails if a switch learned nothing.
//
//	go run ./examples/sdnlearning -topo linear,3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// run builds the network, pings all pairs, dumps every switch's flows to
// out and returns how many learned flows each switch holds.
func run(ctx context.Context, spec string, out io.Writer) (_ map[string]int, err error) {
	t, err := topo.FromSpecString(spec)
	if err != nil {
		return nil, err
	}
	t.AddController("c0", topo.Params{"kind": "ovsc"})
	lg := mnlog.New(out, mnlog.Output)
	net, err := hymn.New(t, hymn.Options{Switch: hymn.SwitchOVS, Log: lg})
	if err != nil {
		return nil, err
	}
	defer func() {
		// A network that did not come down leaves namespaces behind:
		// that fails the run.
		if serr := net.Stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("stopping the network: %w", serr))
		}
	}()
	if err := net.Start(ctx); err != nil {
		return nil, err
	}
	if err := net.WaitConnected(ctx); err != nil {
		return nil, err
	}
	if _, err := net.PingAll(ctx, 0); err != nil {
		return nil, err
	}
	learned := map[string]int{}
	var errs []error
	for _, s := range net.Switches() {
		node, err := net.NsNode(s.Name)
		if err != nil {
			return nil, err
		}
		flows, err := node.OVSNet().Ofctl(ctx, s.Name, "dump-flows")
		if err != nil {
			return nil, fmt.Errorf("dump-flows %s: %v: %s", s.Name, err, flows)
		}
		_, _ = fmt.Fprintf(out, "*** %s %s\n%s", s.Name, strings.Repeat("-", 72), flows)
		// The controller's flows carry an idle timeout; the table-miss
		// entry (to the controller) does not.
		learned[s.Name] = strings.Count(flows, "idle_timeout=")
		if learned[s.Name] == 0 {
			errs = append(errs, fmt.Errorf("switch %s learned no flows", s.Name))
		}
	}
	return learned, errors.Join(errs...)
}

func main() {
	spec := flag.String("topo", "linear,3", "topology (mn spec)")
	flag.Parse()
	if err := nodes.OVSAvailable(); err != nil {
		fmt.Fprintln(os.Stderr, "sdnlearning:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, *spec, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sdnlearning:", err)
		os.Exit(1)
	}
}
