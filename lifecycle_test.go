package hymn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// TestStartIsAllOrNothing cancels Start's context as each phase begins
// (and once before it is called): Start must return the context's error
// and leave nothing of the run behind, whether it built the network
// itself or Build was called first.
func TestStartIsAllOrNothing(t *testing.T) {
	testenv.Root(t)
	for _, phase := range []string{"before", "build", "controllers", "stp"} {
		for _, prebuilt := range []bool{false, true} {
			if phase == "build" && prebuilt {
				continue // Build was called: that phase has nothing to do
			}
			name := phase
			if prebuilt {
				name += "/after-Build"
			}
			t.Run(name, func(t *testing.T) {
				net, err := New(mustTopo(t, "linear,2"), Options{STP: true})
				if err != nil {
					t.Fatal(err)
				}
				if prebuilt {
					if err := net.Build(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if phase == "before" {
					cancel()
				}
				startPhase = func(p string) {
					if p == phase {
						cancel()
					}
				}
				defer func() { startPhase = nil }()
				err = net.Start(ctx)
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Start with the context cancelled at %s = %v, want context.Canceled", phase, err)
				}
				assertRunGone(t, net.RunID())
				if err := net.Stop(); err != nil {
					t.Errorf("Stop after a failed Start: %v", err)
				}
				if err := net.Start(context.Background()); err == nil {
					t.Error("Start after a failed Start succeeded on a removed network")
				}
			})
		}
	}
}

// TestConfigLinkStatusWaits checks that ConfigLinkStatus returns with the
// interfaces in the state asked for: a ping right after "up" gets its
// reply without retries, and both ends are seen down right after "down".
func TestConfigLinkStatusWaits(t *testing.T) {
	testenv.Root(t)
	net := startNet(t, mustTopo(t, "single,2"), Options{})
	h1, _ := net.Node("h1")
	s1, _ := net.Node("s1")
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		if err := net.ConfigLinkStatus("h1", "s1", "down"); err != nil {
			t.Fatal(err)
		}
		for _, e := range []struct {
			ns   links.Namespace
			name string
		}{{h1, "h1-eth0"}, {s1, "s1-eth1"}} {
			if operUp(t, e.ns, e.name) {
				t.Fatalf("round %d: %s is up right after ConfigLinkStatus down", round, e.name)
			}
		}
		if err := net.ConfigLinkStatus("h1", "s1", "up"); err != nil {
			t.Fatal(err)
		}
		if loss, err := net.Ping(ctx, []string{"h1", "h2"}, 2*time.Second); err != nil || loss != 0 {
			t.Fatalf("round %d: ping right after up: %v%% lost, %v", round, loss, err)
		}
	}
}

// operUp reports whether an interface is operationally up.
func operUp(t *testing.T, ns links.Namespace, name string) bool {
	t.Helper()
	var state netlink.LinkOperState
	err := ns.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName(name)
		if err == nil {
			state = l.Attrs().OperState
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return state == netlink.OperUp
}

// TestAddLinkHonoursContext: AddLink with an ended context fails with the
// context's error, leaves no link behind, and the next AddLink works.
func TestAddLinkHonoursContext(t *testing.T) {
	testenv.Root(t)
	net := startNet(t, mustTopo(t, "single,2"), Options{})
	if err := net.AddNode(context.Background(), "h3", topo.KindHost, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := net.AddLink(ctx, "h3", "s1", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("AddLink with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := net.AddLink(context.Background(), "h3", "s1", nil); err != nil {
		t.Fatalf("AddLink after the cancelled one: %v", err)
	}
	if loss, err := net.PingAll(context.Background(), 0); err != nil || loss != 0 {
		t.Fatalf("pingall: %v%% lost, %v", loss, err)
	}
}
