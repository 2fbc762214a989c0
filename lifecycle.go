package hymn

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/topo"
)

// startPhase, when set (by tests), is called as each phase of Start
// begins: "build", "controllers", "stp".
var startPhase func(phase string)

// Start builds the network (unless Build was called), starts its
// controllers and, when switches run STP, waits until their ports have left
// the listening and learning states.
//
// Start is all or nothing: if any phase fails, or ctx ends before Start
// returns, everything built is removed (as by Stop) and the error returned.
// Stop may still be called afterwards; it does nothing more.
func (n *Network) Start(ctx context.Context) (err error) {
	n.mu.Lock()
	built, stopped := n.built, n.stopped
	n.mu.Unlock()
	if stopped {
		return errors.New("network was stopped: make a new one with New")
	}
	defer func() {
		if err != nil {
			n.mu.Lock()
			// Build already removed what it made if it failed itself.
			if terr := n.teardown(false); terr != nil {
				err = errors.Join(err, fmt.Errorf("removing the half-started network: %w", terr))
			}
			n.mu.Unlock()
		}
	}()
	phases := []struct {
		name string
		run  func(context.Context) error
	}{
		{"build", func(ctx context.Context) error {
			if built {
				return nil
			}
			return n.Build(ctx)
		}},
		{"controllers", n.startSDN},
		{"stp", n.waitSTP},
	}
	for _, p := range phases {
		if startPhase != nil {
			startPhase(p.name)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("starting the network (%s): %w", p.name, err)
		}
		if err := p.run(ctx); err != nil {
			return err
		}
	}
	// A context that ended while the last phase finished still fails
	// Start: the caller has given up on the network.
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("starting the network: %w", err)
	}
	return nil
}

// LinkStatusTimeout bounds how long ConfigLinkStatus waits for the
// interfaces to reach the state asked for.
var LinkStatusTimeout = 10 * time.Second

// ConfigLinkStatus brings every link between two nodes up or down (both
// ends), as Mininet's configLinkStatus and the CLI's link command do. It
// returns once the namespace ends of the links are operationally in that
// state (or after LinkStatusTimeout, with an error), so a test can ping
// right after "up" and expect no reply right after "down".
func (n *Network) ConfigLinkStatus(src, dst, status string) error {
	if status != "up" && status != "down" {
		return fmt.Errorf("invalid type: %s (use up or down)", status)
	}
	up := status == "up"
	for _, name := range []string{src, dst} {
		if n.Plan().Node(name) == nil {
			return fmt.Errorf("%w: %s", ErrUnknownNode, name)
		}
	}
	var found []*topo.PlannedLink
	for _, l := range n.Plan().Links {
		a, b := l.Intf1.Node, l.Intf2.Node
		if a == src && b == dst || a == dst && b == src {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		return fmt.Errorf("src and dst not connected: %s %s", src, dst)
	}
	ctx, cancel := context.WithTimeout(context.Background(), LinkStatusTimeout)
	defer cancel()
	n.mu.Lock()
	running := n.nodes
	n.mu.Unlock()
	for _, l := range found {
		for _, i := range []*topo.Intf{l.Intf1, l.Intf2} {
			if g := n.guestIn(running, i.Node); g != nil {
				// The guest agent sets the state before it answers.
				if err := g.SetIntfUp(ctx, i.Name, up); err != nil {
					return fmt.Errorf("link %s: %w", l, err)
				}
				continue
			}
			if err := links.SetUp(running[i.Node], i.Name, up); err != nil {
				return fmt.Errorf("link %s: %w", l, err)
			}
		}
		// Up needs both ends up (a veth's carrier follows its peer), so
		// the wait comes after both are set.
		for _, i := range []*topo.Intf{l.Intf1, l.Intf2} {
			if n.guestIn(running, i.Node) != nil {
				continue
			}
			if err := links.WaitOper(ctx, running[i.Node], i.Name, up); err != nil {
				return fmt.Errorf("link %s: %s: %w", l, status, err)
			}
		}
	}
	return n.linksChanged(ctx, found, up) // routes.go
}
