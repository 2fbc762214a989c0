package ui

import (
	"sort"

	"github.com/hymn-net/hymn"
	"github.com/vishvananda/netlink"
)

// Counters are one direction's kernel counters of a link, read at the end
// a link's counters come from (see readPlan).
type Counters struct {
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
	Dropped uint64 `json:"dropped"`
}

// endRef says where a link's counters are read: the interface intf of
// node, and whether that end is the link's node2 (then its TX is the
// link's b→a direction).
type endRef struct {
	link    int
	intf    string
	swapped bool
}

// readPlan groups the links by the namespace their counters are read in,
// so one sampling costs one interface dump per namespace in the plan, not
// one per link: each link is read at the end whose node has the most
// links (a switch rather than its host), which in linear,1000 means 1000
// dumps for 1999 links instead of 2000.
type readPlan struct {
	nodes []string            // namespaces to dump, in order
	ends  map[string][]endRef // by node
}

func newReadPlan(ls []hymn.LinkInfo) readPlan {
	degree := map[string]int{}
	for _, l := range ls {
		degree[l.Node1]++
		degree[l.Node2]++
	}
	p := readPlan{ends: map[string][]endRef{}}
	for i, l := range ls {
		ref := endRef{link: i, intf: l.Intf1}
		node := l.Node1
		if degree[l.Node2] > degree[l.Node1] {
			ref, node = endRef{link: i, intf: l.Intf2, swapped: true}, l.Node2
		}
		if _, ok := p.ends[node]; !ok {
			p.nodes = append(p.nodes, node)
		}
		p.ends[node] = append(p.ends[node], ref)
	}
	sort.Strings(p.nodes)
	return p
}

// linkCounters are what one sampling learns of a link from the kernel.
type linkCounters struct {
	ok     bool
	up     bool
	ab, ba Counters
}

// read dumps the interfaces of every namespace in the plan and fills
// out[link] for the links found. A node that is gone or a VM (whose
// interfaces are in its guest) leaves its links' entries unset.
func (p readPlan) read(net *hymn.Network, out []linkCounters) {
	for _, name := range p.nodes {
		node, err := net.Node(name)
		if err != nil {
			continue
		}
		refs := p.ends[name]
		_ = node.Netlink(func(h *netlink.Handle) error {
			list, err := h.LinkList()
			if err != nil {
				return err
			}
			byName := make(map[string]netlink.Link, len(list))
			for _, l := range list {
				byName[l.Attrs().Name] = l
			}
			for _, r := range refs {
				l, ok := byName[r.intf]
				if !ok || r.link >= len(out) {
					continue
				}
				a := l.Attrs()
				c := linkCounters{ok: true, up: a.Flags&netFlagUp != 0 && a.OperState != netlink.OperDown}
				if s := a.Statistics; s != nil {
					tx := Counters{Packets: s.TxPackets, Bytes: s.TxBytes, Dropped: s.TxDropped}
					rx := Counters{Packets: s.RxPackets, Bytes: s.RxBytes, Dropped: s.RxDropped}
					c.ab, c.ba = tx, rx
					if r.swapped {
						c.ab, c.ba = rx, tx
					}
				}
				out[r.link] = c
			}
			return nil
		})
	}
}

// netFlagUp is IFF_UP as the netlink package reports it.
const netFlagUp = 1 << 0
