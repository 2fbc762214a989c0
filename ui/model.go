package ui

import (
	"errors"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// Topology is the network's shape, as the snapshot's "topology" gives it.
type Topology struct {
	Run   string     `json:"run"`
	Nodes []NodeView `json:"nodes"`
	Links []LinkView `json:"links"`
}

// NodeView is one node: its role (host, switch, router, nat, controller)
// and backend (netns or vm).
type NodeView struct {
	Name    string     `json:"name"`
	Role    string     `json:"role"`
	Backend string     `json:"backend"`
	Intfs   []IntfView `json:"intfs,omitempty"`
	// Worker runs the node, in a network split over workers.
	Worker *int `json:"worker,omitempty"`
}

// IntfView is a planned interface.
type IntfView struct {
	Name string `json:"name"`
	IP   string `json:"ip,omitempty"`
	MAC  string `json:"mac,omitempty"`
}

// LinkView is one link: its ends and kind (veth, emulated, vf,
// emulated-vf, existing; control for a controller's connection to a
// switch, which has no counters; cut for a VXLAN tunnel between two
// workers of a split network).
type LinkView struct {
	ID    int    `json:"id"`
	Node1 string `json:"node1"`
	Node2 string `json:"node2"`
	Intf1 string `json:"intf1,omitempty"`
	Intf2 string `json:"intf2,omitempty"`
	Kind  string `json:"kind"`
	VLANs []int  `json:"vlans,omitempty"`
	// A cut link's workers (node1's, node2's), its tunnel's VNI and
	// whether it is emulated.
	Workers  []int `json:"workers,omitempty"`
	VNI      int   `json:"vni,omitempty"`
	Emulated bool  `json:"emulated,omitempty"`
}

// Sample is one sampling of every link: the stream's "stats" event and the
// snapshot's "stats".
type Sample struct {
	Time  time.Time    `json:"time"`
	Links []LinkSample `json:"links"`
	// Changes counts the times the list of links changed (a link added,
	// an emulator inserted): a client that sees it move reads the
	// topology again.
	Changes int `json:"changes"`
}

// LinkSample is one link's live state. ab is node1→node2.
type LinkSample struct {
	ID    int        `json:"id"`
	Up    *bool      `json:"up,omitempty"` // nil: unknown (a VM's end)
	AB    DirSample  `json:"ab"`
	BA    DirSample  `json:"ba"`
	Sched *SchedView `json:"schedule,omitempty"`
}

// DirSample is one direction of a link: kernel counters and rates, and on
// an emulated link what the emulator did.
type DirSample struct {
	Counters
	PPS float64  `json:"pps"`
	BPS float64  `json:"bps"`
	Emu *EmuView `json:"emu,omitempty"`
}

// EmuView is one direction of an emulated link.
type EmuView struct {
	Config    string            `json:"config"`
	Received  uint64            `json:"received"`
	Sent      uint64            `json:"sent"`
	Queued    int               `json:"queued"`
	Reordered uint64            `json:"reordered"`
	Drops     map[string]uint64 `json:"drops"`
	// Counts are what the emulator's stages did besides dropping
	// (emulator.Stats.StageCounts: duplicated, corrupted, marked...).
	Counts  map[string]uint64 `json:"counts"`
	DelayUS DelayView         `json:"delay_us"`
}

// DelayView is the realised (applied) delay's summary, in microseconds.
type DelayView struct {
	Count uint64  `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99.9"`
	Max   float64 `json:"max"`
}

// SchedView is where a link's schedule is, per direction.
type SchedView struct {
	Start time.Time            `json:"start"`
	AB    *emulatorSchedStatus `json:"ab,omitempty"`
	BA    *emulatorSchedStatus `json:"ba,omitempty"`
}

// emulatorSchedStatus is the part of emulator.ScheduleStatus the page shows.
type emulatorSchedStatus struct {
	Active   bool    `json:"active"`
	Source   string  `json:"source,omitempty"`
	ElapsedS float64 `json:"elapsed_s"`
	Cycle    int64   `json:"cycle"`
	Next     int     `json:"next"`
	NextAtS  float64 `json:"next_at_s"`
	Points   int     `json:"points"`
	Applied  uint64  `json:"applied"`
	Finished bool    `json:"finished"`
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

func delayView(h emulator.HistogramSummary) DelayView {
	return DelayView{Count: h.Count, Min: us(h.Min), Mean: us(h.Mean), P50: us(h.P50), P90: us(h.P90), P99: us(h.P99), P999: us(h.P999), Max: us(h.Max)}
}

// emuView condenses one direction's emulator counters; drops are by cause
// in path order (the kernel's RX ring, too long, no frame buffer, policer,
// spacer, loss model, queue full, the sending port).
func emuView(cfg emulator.Config, s emulator.DirectionStats) *EmuView {
	e := s.Emulator
	return &EmuView{
		Config:   cfg.String(),
		Received: e.Received, Sent: e.Sent, Queued: e.Queued, Reordered: e.Reordered,
		Drops: map[string]uint64{
			"rx_ring": s.RxPort.RxRingDrops, "truncated": s.RxPort.RxTruncated, "no_buffer": s.NoBuffer,
			"policer": e.Policed, "spacer": e.SpacerDropped, "loss": e.Lost, "queue": e.BufferFull,
			"tx": s.TxPort.TxDropped + s.TxPort.TxFailed,
		},
		Counts:  e.StageCounts(),
		DelayUS: delayView(e.Delay),
	}
}

func schedView(s emulator.ScheduleStatus) *emulatorSchedStatus {
	if s.Points == 0 {
		return nil
	}
	return &emulatorSchedStatus{Active: s.Active, Source: s.Source, ElapsedS: s.Elapsed.Seconds(), Cycle: s.Cycle, Next: s.Next,
		NextAtS: s.NextAt.Seconds(), Points: s.Points, Applied: s.Applied, Finished: s.Finished}
}

// role is a planned node's role for the page.
func role(p *topo.PlannedNode) string {
	switch {
	case p.Kind == topo.KindSwitch:
		return "switch"
	case p.Params[hymn.NATParam] != "":
		return "nat"
	case p.Kind == topo.KindRouter:
		return "router"
	}
	return "host"
}

// topology reads the network's nodes and links.
func topology(net *hymn.Network) Topology {
	t := Topology{Run: net.RunID()}
	for _, p := range net.Plan().Nodes {
		nv := NodeView{Name: p.Name, Role: role(p), Backend: string(net.NodeBackendOf(p.Name))}
		for _, i := range p.Intfs {
			iv := IntfView{Name: i.Name}
			if i.IP.IsValid() {
				iv.IP = i.IP.String()
			}
			if i.MAC != nil {
				iv.MAC = i.MAC.String()
			}
			nv.Intfs = append(nv.Intfs, iv)
		}
		t.Nodes = append(t.Nodes, nv)
	}
	for i, l := range net.Links() {
		t.Links = append(t.Links, LinkView{ID: i, Node1: l.Node1, Node2: l.Node2, Intf1: l.Intf1, Intf2: l.Intf2, Kind: l.Kind, VLANs: l.VLANs})
	}
	ctrls := net.ControllerNames()
	if len(ctrls) > 0 {
		var switches []string
		for _, p := range net.Plan().Switches() {
			switches = append(switches, p.Name)
		}
		for _, c := range ctrls {
			t.Nodes = append(t.Nodes, NodeView{Name: c, Role: "controller", Backend: "process"})
			for _, s := range switches {
				t.Links = append(t.Links, LinkView{ID: -1, Node1: c, Node2: s, Kind: "control"})
			}
		}
	}
	return t
}

// sampler reads every link's counters; it keeps the previous reading to
// turn counters into rates.
type sampler struct {
	net   *hymn.Network
	links []hymn.LinkInfo
	plan  readPlan
	prev  *Sample
	socks map[string]*linkSock // by node, while sampling
	// changes counts the times the list of links changed (a link added,
	// an emulator inserted), so the stream can tell pages to reload it.
	changes int
}

func newSampler(net *hymn.Network) *sampler {
	s := &sampler{net: net, socks: map[string]*linkSock{}}
	s.refresh()
	return s
}

// closeSocks closes the sampler's sockets: they hold the namespaces alive,
// so they must not outlive the network nor stay open while nobody watches.
func (s *sampler) closeSocks() {
	for k, c := range s.socks {
		c.close()
		delete(s.socks, k)
	}
}

// idle closes the sockets and forgets the last sample: nobody watches.
func (s *sampler) idle() {
	s.prev = nil
	s.closeSocks()
}

// stale makes the next sampling re-read every interface's state (after an
// action changed one).
func (s *sampler) stale() {
	for _, c := range s.socks {
		c.stale = true
	}
}

// refresh re-reads the list of links (one may have been added live, or a
// plain link got an emulator).
func (s *sampler) refresh() {
	s.closeSocks() // an emulator inserted re-creates interfaces: start afresh
	s.links = s.net.Links()
	s.plan = newReadPlan(s.links)
}

func (s *sampler) sample() *Sample {
	if cur := s.net.Links(); !sameLinks(cur, s.links) {
		s.refresh()
		s.changes++
	}
	now := time.Now()
	kc := make([]linkCounters, len(s.links))
	if s.net.Running() {
		s.plan.read(s.net, s.socks, kc)
	} else {
		s.closeSocks()
	}
	scheds := map[[2]string]hymn.LinkSchedule{}
	for _, ls := range s.net.LinkSchedules() {
		scheds[[2]string{ls.Node1, ls.Node2}] = ls
	}
	out := &Sample{Time: now, Links: make([]LinkSample, len(s.links)), Changes: s.changes}
	for i, l := range s.links {
		ls := LinkSample{ID: i}
		if kc[i].ok {
			up := kc[i].up
			ls.Up = &up
			ls.AB.Counters, ls.BA.Counters = kc[i].ab, kc[i].ba
		}
		if strings.HasPrefix(l.Kind, "emulated") {
			if st, err := s.net.LinkStats(l.Node1, l.Node2); err == nil {
				ls.AB.Emu, ls.BA.Emu = emuView(st.ForwardConfig, st.Forward), emuView(st.ReverseConfig, st.Reverse)
			}
		}
		if sc, ok := scheds[[2]string{l.Node1, l.Node2}]; ok {
			ls.Sched = &SchedView{Start: sc.Start, AB: schedView(sc.Forward), BA: schedView(sc.Reverse)}
		} else if sc, ok := scheds[[2]string{l.Node2, l.Node1}]; ok {
			ls.Sched = &SchedView{Start: sc.Start, AB: schedView(sc.Reverse), BA: schedView(sc.Forward)}
		}
		if s.prev != nil && i < len(s.prev.Links) {
			dt := now.Sub(s.prev.Time).Seconds()
			p := s.prev.Links[i]
			rate(&ls.AB, p.AB, dt)
			rate(&ls.BA, p.BA, dt)
		}
		out.Links[i] = ls
	}
	s.prev = out
	return out
}

func rate(cur *DirSample, prev DirSample, dt float64) {
	if dt <= 0 || cur.Packets < prev.Packets || cur.Bytes < prev.Bytes {
		return
	}
	cur.PPS = float64(cur.Packets-prev.Packets) / dt
	cur.BPS = 8 * float64(cur.Bytes-prev.Bytes) / dt
}

func sameLinks(a, b []hymn.LinkInfo) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Node1 != b[i].Node1 || a[i].Node2 != b[i].Node2 || a[i].Kind != b[i].Kind {
			return false
		}
	}
	return true
}

// HistBin is one bin of a delay histogram, in microseconds.
type HistBin struct {
	LowerUS float64 `json:"lower_us"`
	UpperUS float64 `json:"upper_us"`
	Count   uint64  `json:"count"`
}

// maxBins bounds a histogram sent to the page: neighbouring buckets are
// merged until it fits.
const maxBins = 120

func bins(h emulator.Histogram) []HistBin {
	raw := h.Bins()
	out := make([]HistBin, 0, min(len(raw), maxBins))
	per := (len(raw) + maxBins - 1) / maxBins
	for i := 0; i < len(raw); i += max(per, 1) {
		j := min(i+max(per, 1), len(raw))
		b := HistBin{LowerUS: float64(raw[i].Lower) / 1e3, UpperUS: float64(raw[j-1].Upper) / 1e3}
		for _, r := range raw[i:j] {
			b.Count += r.Count
		}
		out = append(out, b)
	}
	return out
}

// errNotFound is an unknown node, link or capture.
var errNotFound = errors.New("not found")
