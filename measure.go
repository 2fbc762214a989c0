package hymn

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/measure"
	"github.com/hymn-net/hymn/nodes"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Measure runs `hymn measure` from host from to host to: UDP at each of
// cfg.Rates (and the zero-loss search when cfg.ZeroLoss is set), one-way
// latency from kernel receive timestamps into HDR histograms. Both ends
// must be namespace nodes (a VM's clock is not the host's); the path
// between them may hold any nodes and links. cfg's namespaces and
// destination address are filled in; a port in cfg.Dst is kept.
func (n *Network) Measure(ctx context.Context, from, to string, cfg measure.Config) (*measure.Report, error) {
	if from == to {
		return nil, fmt.Errorf("measure: sender and receiver are both %s", from)
	}
	src, err := n.NsNode(from)
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	dst, err := n.NsNode(to)
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	ip, err := n.IP(to)
	if err != nil {
		return nil, fmt.Errorf("measure: %w", err)
	}
	cfg.Dst = netip.AddrPortFrom(ip, cfg.Dst.Port())
	cfg.InSender = func(fn func() error) error { return netnsx.Do(src.NsHandle(), fn) }
	cfg.InReceiver = func(fn func() error) error { return netnsx.Do(dst.NsHandle(), fn) }
	if cfg.GeneratorRate == nil {
		// Every report says how fast its generator is, the kind the
		// trials use, so a rate near it reads as the generator's limit,
		// not the path's.
		cfg.GeneratorRate = func(g measure.Generator) (float64, error) {
			r, err := n.GeneratorRate(ctx, from, cfg.Frame, g, measure.GeneratorCheckDefault)
			return r.PPS, err
		}
	}
	rep, err := measure.Run(ctx, cfg)
	if rep != nil {
		rep.From, rep.To = from, to
	}
	if err != nil {
		return rep, fmt.Errorf("measure %s -> %s: %w", from, to, err)
	}
	return rep, nil
}

// GeneratorRate measures what the measure generator g (measure.GenAuto:
// the one a measurement from host would use) sends from host on one core
// with nothing in its way. See withSink for where the packets go.
func (n *Network) GeneratorRate(ctx context.Context, host string, frame int, g measure.Generator, d time.Duration) (measure.GeneratorResult, error) {
	var out measure.GeneratorResult
	err := n.withSink(host, func(in measure.RunFunc, dst netip.AddrPort) error {
		var err error
		out, err = measure.GeneratorRate(ctx, in, dst, frame, g, d)
		return err
	})
	return out, err
}

// CompareGenerators measures every generator alone from host, side by
// side: rounds rounds of d each, the generators interleaved in each
// round, so a change in the machine's load shows in all of them alike.
// Each result is the median of its rounds; a generator that cannot run
// on this kernel is left out.
func (n *Network) CompareGenerators(ctx context.Context, host string, frame, rounds int, d time.Duration) ([]measure.GeneratorResult, error) {
	if rounds < 1 {
		rounds = 1
	}
	rates := make([][]float64, len(measure.Generators))
	err := n.withSink(host, func(in measure.RunFunc, dst netip.AddrPort) error {
		for range rounds {
			for i, g := range measure.Generators {
				r, err := measure.GeneratorRate(ctx, in, dst, frame, g, d)
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if err == nil {
					rates[i] = append(rates[i], r.PPS)
				}
			}
		}
		return nil
	})
	var out []measure.GeneratorResult
	for i, g := range measure.Generators {
		if len(rates[i]) > 0 {
			out = append(out, measure.GeneratorResult{Generator: g.String(), PPS: median(rates[i])})
		}
	}
	return out, err
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// withSink runs fn with a sink for the generator in host: a device whose
// transmit frees every frame at once, so the generator's rate is its own
// cost (socket or ring, skb, the driver's entry and free) and none of a
// path's. The device is a VXLAN with no remote (the kernel here has no
// dummy driver; VXLAN's transmit drops a frame for an unknown MAC after
// one table lookup, reporting success, and the device has carrier, which
// PACKET_QDISC_BYPASS and AF_XDP need). Where no VXLAN can be made (its
// UDP port taken in the namespace, no module) it is a veth pair with both
// ends up, whose peer drops each frame at the first step of its receive
// path (not addressed to it): about half the generator's rate again in
// kernel work on the sending core. The neighbour is permanent, in
// 198.18.0.0/15 (RFC 2544's benchmarking range). The device is removed
// after.
func (n *Network) withSink(host string, fn func(in measure.RunFunc, dst netip.AddrPort) error) error {
	node, err := n.NsNode(host)
	if err != nil {
		return fmt.Errorf("generator rate: %w", err)
	}
	const dev = "hymngen0"
	local := netip.MustParsePrefix("198.18.0.1/30")
	peer := netip.MustParseAddr("198.18.0.2")
	err = node.Netlink(func(h *netlink.Handle) error {
		err := addSink(h, &netlink.Vxlan{LinkAttrs: netlink.LinkAttrs{Name: dev}, VxlanId: 42, Port: 4789}, nil, local, peer)
		if err != nil {
			if l, lerr := h.LinkByName(dev); lerr == nil {
				_ = h.LinkDel(l) // the veth below is tried either way; a leftover makes its add fail and say so
			}
			err = addSink(h, &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: dev}, PeerName: dev + "p"}, []string{dev + "p"}, local, peer)
		}
		return err
	})
	// The sink goes with the namespace at the latest; a failed delete
	// now leaves nothing for the network's own teardown to miss.
	defer func() {
		_ = node.Netlink(func(h *netlink.Handle) error {
			if l, err := h.LinkByName(dev); err == nil {
				return h.LinkDel(l)
			}
			return nil
		})
	}()
	if err != nil {
		return fmt.Errorf("generator rate: sink interface in %s: %w", host, err)
	}
	if err := waitCarrier(node, dev); err != nil {
		return fmt.Errorf("generator rate: %w", err)
	}
	return fn(func(fn func() error) error { return netnsx.Do(node.NsHandle(), fn) }, netip.AddrPortFrom(peer, 9))
}

// addSink adds link (and brings up the other devices named in also, a
// veth's peer), gives it local and a permanent neighbour peer.
func addSink(h *netlink.Handle, link netlink.Link, also []string, local netip.Prefix, peer netip.Addr) error {
	if err := h.LinkAdd(link); err != nil {
		return err
	}
	l, err := h.LinkByName(link.Attrs().Name)
	if err != nil {
		return err
	}
	if err := h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: local.Addr().AsSlice(), Mask: net.CIDRMask(local.Bits(), 32)}}); err != nil {
		return err
	}
	for _, name := range append(also, l.Attrs().Name) {
		x, err := h.LinkByName(name)
		if err != nil {
			return err
		}
		if err := h.LinkSetUp(x); err != nil {
			return err
		}
	}
	return h.NeighAdd(&netlink.Neigh{LinkIndex: l.Attrs().Index, State: netlink.NUD_PERMANENT, IP: peer.AsSlice(),
		HardwareAddr: net.HardwareAddr{0x02, 0, 0, 0, 0, 2}})
}

// waitCarrier waits up to a second for dev in node to report carrier
// (a veth does once both ends are up; the operational state follows).
func waitCarrier(node *nodes.NsNode, dev string) error {
	deadline := time.Now().Add(time.Second)
	for {
		var up bool
		// An error leaves up false: the loop asks again until the deadline.
		_ = node.Netlink(func(h *netlink.Handle) error {
			l, err := h.LinkByName(dev)
			if err == nil {
				up = l.Attrs().RawFlags&unix.IFF_LOWER_UP != 0
			}
			return err
		})
		if up {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sink %s has no carrier after 1s", dev)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
