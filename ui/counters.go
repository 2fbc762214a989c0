package ui

import (
	"sort"

	"github.com/hymn-net/hymn"
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
// out[link] for the links found, through socks (opened on first use). A
// node that is gone or a VM (whose interfaces are in its guest) leaves its
// links' entries unset.
func (p readPlan) read(nw *hymn.Network, socks map[string]*linkSock, out []linkCounters) {
	byName := map[string]ifStats{}
	// A socket holds its namespace alive: a node deleted from the
	// running network (net.delHost) gives its socket up here.
	for name, s := range socks {
		if _, err := nw.Node(name); err != nil {
			s.close()
			delete(socks, name)
		}
	}
	for _, name := range p.nodes {
		node, err := nw.Node(name)
		if err != nil {
			continue
		}
		s := socks[name]
		if s == nil {
			if s, err = openLinkSock(node.NsHandle()); err != nil {
				continue
			}
			socks[name] = s
		}
		clear(byName)
		if err := s.read(byName); err != nil {
			s.close()
			delete(socks, name)
			continue
		}
		for _, r := range p.ends[name] {
			st, ok := byName[r.intf]
			if !ok || r.link >= len(out) {
				continue
			}
			tx := Counters{Packets: st.txPackets, Bytes: st.txBytes, Dropped: st.txDropped}
			rx := Counters{Packets: st.rxPackets, Bytes: st.rxBytes, Dropped: st.rxDropped}
			c := linkCounters{ok: true, up: st.up, ab: tx, ba: rx}
			if r.swapped {
				c.ab, c.ba = rx, tx
			}
			out[r.link] = c
		}
	}
}
