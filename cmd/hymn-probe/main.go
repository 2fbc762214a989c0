// Command hymn-probe measures one-way delay, jitter, loss and reordering
// between two network namespaces with timestamped UDP probes:
//
//	hymn-probe --from hymn-abc123-h1 --to hymn-abc123-h2 --dst 10.0.0.2 --rate 10000 --duration 5s
//
// Both ends run in this process (sockets are opened inside the named
// namespaces), so the delays need no clock synchronisation.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/probe"
	"github.com/vishvananda/netns"
)

func main() {
	from := flag.String("from", "", "sender namespace (default: this one)")
	to := flag.String("to", "", "receiver namespace (default: this one)")
	dst := flag.String("dst", "", "receiver address IP[:port] (port 9999 by default)")
	rate := flag.Float64("rate", 10000, "probes per second")
	dur := flag.Duration("duration", 5*time.Second, "how long to send")
	size := flag.Int("size", 64, "UDP payload bytes")
	drain := flag.Duration("drain", time.Second, "wait this long for late probes")
	asJSON := flag.Bool("json", false, "print the result as JSON")
	flag.Parse()
	if err := run(*from, *to, *dst, *rate, *dur, *size, *drain, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "hymn-probe:", err)
		os.Exit(1)
	}
}

func open(name string) (netns.NsHandle, error) {
	if name == "" {
		return -1, nil
	}
	return netnsx.Open(name)
}

func run(from, to, dst string, rate float64, dur time.Duration, size int, drain time.Duration, asJSON bool) error {
	ap, err := netip.ParseAddrPort(dst)
	if err != nil {
		a, err2 := netip.ParseAddr(dst)
		if err2 != nil {
			return fmt.Errorf("--dst %q: %v", dst, err)
		}
		ap = netip.AddrPortFrom(a, 9999)
	}
	s, err := open(from)
	if err != nil {
		return err
	}
	r, err := open(to)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := probe.Run(ctx, probe.Config{Sender: s, Receiver: r, Dst: ap, Rate: rate, Duration: dur, Size: size, Drain: drain})
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(os.Stdout).Encode(res)
	}
	fmt.Println(res)
	return nil
}
