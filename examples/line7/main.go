// Command line7 builds the CIMininet paper's line of seven hosts: h1 - h2 -
// ... - h7 joined directly (no switches), every link its own /24, the inner
// hosts forwarding IPv4 and every host routing toward both ends. It runs a
// test (pingall by default) and tears the network down.
//
//	go run ./examples/line7 --test pingall
//	go run ./examples/line7 --nodes vm --links sriov   # the same line on VMs and VF pairs
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

// Hosts is the length of the line.
const Hosts = 7

func main() {
	test := flag.String("test", "pingall", "test to run: pingall, pingallfull, iperf or none")
	verbosity := flag.String("v", "info", "verbosity: debug, info, output, warning, error")
	nodes := flag.String("nodes", "netns", "backend of the hosts: netns or vm")
	links := flag.String("links", "veth", "backend of the links: veth or sriov")
	flag.Parse()
	level, err := mnlog.ParseLevel(*verbosity)
	if err != nil {
		fmt.Fprintln(os.Stderr, "line7:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	nodeBackend, err := hymn.ParseNodeBackend(*nodes)
	if err != nil {
		fmt.Fprintln(os.Stderr, "line7:", err)
		os.Exit(2)
	}
	linkBackend, sriovCfg, err := hymn.ParseLinkBackend(*links)
	if err != nil {
		fmt.Fprintln(os.Stderr, "line7:", err)
		os.Exit(2)
	}
	opts := hymn.Options{Log: mnlog.New(os.Stderr, level), Nodes: nodeBackend, Links: linkBackend, SRIOV: &sriovCfg}
	if err := run(ctx, *test, opts); err != nil {
		fmt.Fprintln(os.Stderr, "line7:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, test string, opts hymn.Options) (err error) {
	line, err := topo.RoutedLine(Hosts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	net, err := hymn.New(line, opts)
	if err != nil {
		return err
	}
	if err := net.Start(ctx); err != nil {
		return err
	}
	defer func() {
		if stopErr := net.Stop(); err == nil {
			err = stopErr
		}
	}()
	switch test {
	case "pingall":
		loss, err := net.PingAll(ctx, 0)
		if err == nil && loss > 0 {
			err = fmt.Errorf("%.0f%% of pings lost", loss)
		}
		return err
	case "pingallfull":
		_, err = net.PingAllFull(ctx, 0)
	case "iperf":
		_, err = net.Iperf(ctx, "h1", "h7", 0)
	case "none":
	default:
		return fmt.Errorf("unknown test %q", test)
	}
	return err
}
