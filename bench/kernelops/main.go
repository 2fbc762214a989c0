// Command kernelops measures the bare kernel operations that building and
// tearing down a linear,N network costs, one kind at a time and without
// hymn around them: the physical limit a hymn build on this machine can be
// judged against (bench/README.md, "the bare kernel operations").
//
// For N hosts and N switches (2N namespaces, 2N-1 veth pairs, as linear,N)
// it times, in this order, each phase over all nodes or links:
//
//	netns      create a named namespace (a file in /run/netns, unshare,
//	           bind mount: what ip netns add and hymn do), open it and a
//	           netlink handle, loopback up
//	bpf-load   one eBPF learning switch per switch namespace (its maps and
//	           program through bpf(2): package bpfswitch)
//	veth       a veth pair created with each end in its namespace
//	addr       the host end's IPv4 address
//	up         both ends up (the switch end after its program is on it)
//	attach     the switch's program on the switch end's tc ingress (clsact
//	           qdisc, BPF filter) and the port list updated
//	carrier    until every end is operationally up
//	delete     every namespace unmounted and removed (returns at once)
//	tail       until the kernel's netns cleanup has finished (kworker)
//
// each with -workers goroutines (1: strictly serial), and prints the time
// per phase and per node. Usage (as root): go run ./bench/kernelops -n 1000
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hymn-net/hymn/bpfswitch"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netlink"
)

func main() {
	n := flag.Int("n", 1000, "hosts (and switches): linear,N")
	workers := flag.Int("workers", 1, "goroutines per phase")
	flag.Parse()
	if err := run(*n, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "kernelops:", err)
		os.Exit(1)
	}
}

type node struct {
	ns *netnsx.Named
	sw *bpfswitch.Switch // switches only
}

type link struct {
	a, b       *node
	aName, bNm string
	ip         *net.IPNet // host end's address, nil between switches
}

func run(n, workers int) error {
	prefix := fmt.Sprintf("hymnk%d-", os.Getpid()%100000)
	hosts, switches := make([]*node, n), make([]*node, n)
	all := make([]*node, 0, 2*n)
	for i := range n {
		hosts[i], switches[i] = &node{}, &node{}
		all = append(all, hosts[i], switches[i])
	}
	var links []link
	for i := range n {
		links = append(links, link{a: hosts[i], b: switches[i], aName: fmt.Sprintf("h%d-eth0", i+1), bNm: fmt.Sprintf("s%d-eth1", i+1),
			ip: &net.IPNet{IP: net.IPv4(10, byte((i+1)>>16), byte((i+1)>>8), byte(i+1)), Mask: net.CIDRMask(8, 32)}})
	}
	for i := range n - 1 {
		links = append(links, link{a: switches[i], b: switches[i+1], aName: fmt.Sprintf("s%d-eth2", i+1), bNm: fmt.Sprintf("s%d-eth3", i+2)})
	}
	defer func() { // whatever happened, nothing stays
		for _, x := range all {
			if x.ns != nil {
				_ = x.ns.Delete() // cleanup after an error already reported
			}
		}
	}()
	var total time.Duration
	phase := func(name string, count int, fn func(i int) error) error {
		t0 := time.Now()
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make([]error, workers)
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= count || errs[w] != nil {
						return
					}
					errs[w] = fn(i)
				}
			}()
		}
		wg.Wait()
		d := time.Since(t0)
		total += d
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		fmt.Printf("%-9s %5d x  %8.3f s  %7.1f us each  %7.1f us per node\n", name, count, d.Seconds(), float64(d.Microseconds())/float64(count), float64(d.Microseconds())/float64(2*n))
		return nil
	}
	fmt.Printf("linear,%d: %d namespaces, %d veth pairs, %d worker(s)\n", n, 2*n, len(links), workers)
	if err := phase("netns", 2*n, func(i int) (err error) {
		all[i].ns, err = netnsx.CreateNamed(fmt.Sprintf("%s%d", prefix, i))
		return err
	}); err != nil {
		return err
	}
	if err := phase("bpf-load", n, func(i int) (err error) {
		switches[i].sw, err = bpfswitch.New(fmt.Sprintf("s%d", i+1), 8)
		return err
	}); err != nil {
		return err
	}
	if err := phase("veth", len(links), func(i int) error {
		l := links[i]
		v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: l.aName}, PeerName: l.bNm, PeerNamespace: netlink.NsFd(int(l.b.ns.NsHandle()))}
		return l.a.ns.Netlink(func(h *netlink.Handle) error { return h.LinkAdd(v) })
	}); err != nil {
		return err
	}
	byName := func(x *node, name string) (netlink.Link, error) {
		var l netlink.Link
		err := x.ns.Netlink(func(h *netlink.Handle) (err error) { l, err = h.LinkByName(name); return err })
		return l, err
	}
	if err := phase("addr", n, func(i int) error {
		l := links[i]
		return l.a.ns.Netlink(func(h *netlink.Handle) error {
			dev, err := h.LinkByName(l.aName)
			if err != nil {
				return err
			}
			return h.AddrAdd(dev, &netlink.Addr{IPNet: l.ip})
		})
	}); err != nil {
		return err
	}
	if err := phase("attach", len(links), func(i int) error {
		l := links[i]
		for _, end := range []struct {
			x    *node
			name string
		}{{l.a, l.aName}, {l.b, l.bNm}} {
			if end.x.sw == nil {
				continue
			}
			if err := end.x.ns.Netlink(func(h *netlink.Handle) error { return end.x.sw.Attach(h, end.name) }); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := phase("up", len(links), func(i int) error {
		l := links[i]
		for _, end := range []struct {
			x    *node
			name string
		}{{l.a, l.aName}, {l.b, l.bNm}} {
			if err := end.x.ns.Netlink(func(h *netlink.Handle) error {
				dev, err := h.LinkByName(end.name)
				if err != nil {
					return err
				}
				return h.LinkSetUp(dev)
			}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := phase("carrier", len(links), func(i int) error {
		l := links[i]
		for _, end := range []struct {
			x    *node
			name string
		}{{l.a, l.aName}, {l.b, l.bNm}} {
			for {
				dev, err := byName(end.x, end.name)
				if err != nil {
					return err
				}
				if dev.Attrs().OperState == netlink.OperUp {
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	build := total
	for _, x := range switches {
		if err := x.sw.Close(); err != nil {
			return fmt.Errorf("closing switch: %w", err)
		}
	}
	if err := phase("delete", 2*n, func(i int) error {
		err := all[i].ns.Delete()
		all[i].ns = nil
		return err
	}); err != nil {
		return err
	}
	t0 := time.Now()
	waitNetnsCleanup(context.Background())
	tail := time.Since(t0)
	fmt.Printf("%-9s %5s    %8.3f s  %7s         %7.1f us per node\n", "tail", "", tail.Seconds(), "", float64(tail.Microseconds())/float64(2*n))
	total += tail
	fmt.Printf("build %.3f s, build+teardown+tail %.3f s: %.0f us per node (%d nodes)\n", build.Seconds(), total.Seconds(), float64(total.Microseconds())/float64(2*n), 2*n)
	return nil
}

// waitNetnsCleanup waits until no kworker runs the kernel's netns cleanup,
// seen three polls in a row 10 ms apart (as bench/compare.sh's settle).
func waitNetnsCleanup(ctx context.Context) {
	quiet := 0
	for quiet < 3 && ctx.Err() == nil {
		out, _ := exec.Command("ps", "-eo", "comm=").Output()
		if strings.Contains(string(out), "+netns") {
			quiet = 0
		} else {
			quiet++
		}
		time.Sleep(10 * time.Millisecond)
	}
}
