package main

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

func TestAddresses(t *testing.T) {
	arp := make([]byte, 42)
	arp[12], arp[13] = 0x08, 0x06
	copy(arp[28:], []byte{10, 0, 0, 1})
	copy(arp[38:], []byte{10, 0, 0, 2})
	src, dst, ok := addresses(arp)
	if !ok || src != netip.MustParseAddr("10.0.0.1") || dst != netip.MustParseAddr("10.0.0.2") {
		t.Errorf("ARP: %v %v %v", src, dst, ok)
	}
	if _, _, ok := addresses(arp[:20]); ok {
		t.Error("a short frame has no addresses")
	}
	if _, err := parseBlock("10.0.0.1"); err == nil {
		t.Error("one address accepted")
	}
}

// TestRemoteControllerDropsOnePair starts the controller before the
// network, as a user starts Ryu or POX, and checks that every switch
// connects to it and that pingall sees exactly the blocked pair fail.
func TestRemoteControllerDropsOnePair(t *testing.T) {
	hymntest.RequireRoot(t)
	hymntest.RequireTools(t, "ovs-vswitchd", "ovsdb-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &Controller{Blocked: [2]netip.Addr{netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")}}
	done := make(chan error, 1)
	go func() { done <- c.Serve(ln) }()
	t.Cleanup(func() {
		if err := ln.Close(); err != nil {
			t.Error(err)
		}
		// Serve returns nil once its listener is closed.
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	port := ln.Addr().(*net.TCPAddr).Port
	tp, err := topo.FromSpecString("linear,3")
	if err != nil {
		t.Fatal(err)
	}
	tp.AddController("c0", topo.Params{"kind": "remote", "ip": "127.0.0.1", "port": strconv.Itoa(port)})
	var out strings.Builder
	net, err := hymn.New(tp, hymn.Options{Switch: hymn.SwitchOVS, Log: mnlog.New(&out, mnlog.Output)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if err := net.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := net.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := net.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	// The controller counts a switch once the switch's hello arrived,
	// which may be just after hymn saw the controller's.
	for deadline := time.Now().Add(10 * time.Second); c.Connections.Load() < 3 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := c.Connections.Load(); got != 3 {
		t.Errorf("%d switches connected to the remote controller, want 3", got)
	}
	if _, err := net.PingAll(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"h1 -> X h3", "h2 -> X h3", "h3 -> h1 h2", "*** Results: 33% dropped (4/6 received)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("pingall lacks %q:\n%s", want, out.String())
		}
	}
	if c.Dropped.Load() == 0 || c.Flooded.Load() == 0 {
		t.Errorf("flooded %d, dropped %d: want both", c.Flooded.Load(), c.Dropped.Load())
	}
	if err := net.Stop(); err != nil {
		t.Fatal(err)
	}
	hymntest.AssertRunGone(t, net.RunID())
}
