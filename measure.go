package hymn

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/measure"
	"github.com/vishvananda/netlink"
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
	rep, err := measure.Run(ctx, cfg)
	if rep != nil {
		rep.From, rep.To = from, to
	}
	if err != nil {
		return rep, fmt.Errorf("measure %s -> %s: %w", from, to, err)
	}
	return rep, nil
}

// GeneratorRate measures what the measure generator sends from host on one
// core with nothing in its way: a veth pair whose peer stays down, with a
// permanent neighbour in 198.18.0.0/15 (RFC 2544's benchmarking range), is
// added to the host for d and removed after, so every packet goes through
// the UDP stack and veth's transmit and is dropped there (this kernel has
// no dummy driver). Packets/s.
func (n *Network) GeneratorRate(ctx context.Context, host string, frame int, d time.Duration) (float64, error) {
	node, err := n.NsNode(host)
	if err != nil {
		return 0, fmt.Errorf("generator rate: %w", err)
	}
	const dev = "hymngen0"
	local := netip.MustParsePrefix("198.18.0.1/30")
	peer := netip.MustParseAddr("198.18.0.2")
	err = node.Netlink(func(h *netlink.Handle) error {
		link := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: dev}, PeerName: dev + "p"}
		if err := h.LinkAdd(link); err != nil {
			return err
		}
		l, err := h.LinkByName(dev)
		if err != nil {
			return err
		}
		if err := h.AddrAdd(l, &netlink.Addr{IPNet: &net.IPNet{IP: local.Addr().AsSlice(), Mask: net.CIDRMask(local.Bits(), 32)}}); err != nil {
			return err
		}
		if err := h.LinkSetUp(l); err != nil {
			return err
		}
		return h.NeighAdd(&netlink.Neigh{LinkIndex: l.Attrs().Index, State: netlink.NUD_PERMANENT, IP: peer.AsSlice(),
			HardwareAddr: net.HardwareAddr{0x02, 0, 0, 0, 0, 2}})
	})
	defer node.Netlink(func(h *netlink.Handle) error {
		if l, err := h.LinkByName(dev); err == nil {
			return h.LinkDel(l)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("generator rate: sink interface in %s: %w", host, err)
	}
	return measure.GeneratorRate(ctx, func(fn func() error) error { return netnsx.Do(node.NsHandle(), fn) },
		netip.AddrPortFrom(peer, 9), frame, 0, d)
}
