package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/partition"
	"github.com/hymn-net/hymn/topo"
)

// DefaultPort is VXLAN's IANA port.
const DefaultPort = 4789

// DefaultVNIBase was the first VNI of every run's cut links (the link with
// index i used DefaultVNIBase+i). A run now draws its VNIs from a random
// key (Spec.VNIKey) unless a base is asked for explicitly; the constant
// stays for callers that want the old, predictable numbering.
const DefaultVNIBase = 4200

// VNIKeyLen is the length of a run's VNI key in bytes.
const VNIKeyLen = 16

// MaxVNI is the largest VXLAN network identifier (24 bits).
const MaxVNI = 1<<24 - 1

// VXLANOverhead is what VXLAN adds on an IPv4 underlay: the inner
// Ethernet header (14), VXLAN (8), UDP (8) and IPv4 (20). Over IPv6 it is
// 70.
const VXLANOverhead = 50

// ErrBadSpec matches every error in a part specification (errors.Is).
var ErrBadSpec = errors.New("bad part specification")

// Spec is what a worker is given: the whole topology (every worker
// resolves it the same way, so names and addresses agree), the split, and
// which part is its own. It is JSON so a coordinator can hand it over any
// transport (a file, a ConfigMap).
type Spec struct {
	// Topology is a built-in spec ("linear,4") or, with File set, the
	// contents of a hymn YAML/JSON topology file.
	Topology string `json:"topology"`
	File     string `json:"file,omitempty"` // the file's name, for error messages
	IPBase   string `json:"ipbase,omitempty"`
	AutoMAC  bool   `json:"mac,omitempty"`
	// Source names who gave the topology when not the local user ("a
	// Topology resource"): its file names (a trace, a VM's image) are
	// then refused, by the coordinator and by every worker
	// (topo.RemoteFiles).
	Source string `json:"source,omitempty"`

	Worker  int            `json:"worker"`  // this worker's number
	Workers int            `json:"workers"` // how many there are
	Assign  map[string]int `json:"assign"`  // node -> worker, every node

	Port int `json:"port,omitempty"` // VXLAN UDP port; 0: DefaultPort
	// VNIBase, when set, numbers the cut links' VNIs VNIBase+i (i the
	// link's index in the plan): predictable, for an operator who needs
	// fixed numbers. 0: the VNIs come from VNIKey.
	VNIBase int `json:"vni_base,omitempty"`
	// VNIKey (hex, VNIKeyLen bytes) is the run's secret from which every
	// worker derives the same VNIs: drawn at random by NewSpec, so
	// a sender that knows the topology cannot guess them.
	VNIKey string `json:"vni_key,omitempty"`
}

// LoadSpec reads a JSON spec, refusing unknown fields (a typo would
// otherwise silently mean the default) and trailing data.
func LoadSpec(data []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrBadSpec)
	}
	return &s, nil
}

func (s *Spec) port() int {
	if s.Port == 0 {
		return DefaultPort
	}
	return s.Port
}

// NewVNIKey returns a random VNI key (hex) for Spec.VNIKey.
func NewVNIKey() string {
	b := make([]byte, VNIKeyLen)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it panics instead)
	return hex.EncodeToString(b)
}

// vnis assigns a VNI to every cut link of the plan (link index -> VNI):
// VNIBase+i when a base is set, else a 24-bit number derived from the
// key and the link's index (HMAC-SHA256), never 0 and never one an
// earlier link took: the same on every worker, unpredictable without the
// key, distinct within the run.
func (s *Spec) vnis(plan *topo.Plan) (map[int]int, error) {
	out := map[int]int{}
	var key []byte
	if s.VNIBase == 0 {
		var err error
		if key, err = hex.DecodeString(s.VNIKey); err != nil || len(key) != VNIKeyLen {
			return nil, fmt.Errorf("%w: vni_key must be %d hex digits (the coordinator draws it; or set vni_base)", ErrBadSpec, 2*VNIKeyLen)
		}
	}
	used := map[int]bool{}
	for i, l := range plan.Links {
		if s.Assign[l.Intf1.Node] == s.Assign[l.Intf2.Node] {
			continue
		}
		if s.VNIBase != 0 {
			vni := s.VNIBase + i
			if vni > MaxVNI {
				return nil, fmt.Errorf("%w: link %s would need VNI %d, above %d; lower vni_base", ErrBadSpec, l, vni, MaxVNI)
			}
			out[i] = vni
			continue
		}
		for try := uint32(0); ; try++ {
			m := hmac.New(sha256.New, key)
			var msg [8]byte
			binary.BigEndian.PutUint32(msg[:4], uint32(i))
			binary.BigEndian.PutUint32(msg[4:], try)
			m.Write([]byte("hymn-vni\x00"))
			m.Write(msg[:])
			sum := m.Sum(nil)
			vni := int(sum[0])<<16 | int(sum[1])<<8 | int(sum[2])
			if vni != 0 && !used[vni] {
				used[vni], out[i] = true, vni
				break
			}
		}
	}
	return out, nil
}

// Resolved is a spec read and checked against its topology.
type Resolved struct {
	Spec *Spec
	Plan *topo.Plan // the whole topology
	// Cut are the cut links touching this worker, in plan order.
	Cut []CutLink
}

// CutLink is a link with one end on this worker and one elsewhere.
type CutLink struct {
	Link   *topo.PlannedLink
	Index  int // in the plan's links
	VNI    int
	Local  *topo.Intf
	Remote *topo.Intf
	Peer   int  // the worker holding Remote
	First  bool // Local is the link's first end (a): this side emulates a>b
}

// Resolve loads the spec's topology, resolves it and checks the spec
// against it: every node assigned to a worker in range, VNIs in range.
func (s *Spec) Resolve() (*Resolved, error) {
	if s.Workers < 1 {
		return nil, fmt.Errorf("%w: workers must be at least 1, got %d", ErrBadSpec, s.Workers)
	}
	if s.Worker < 0 || s.Worker >= s.Workers {
		return nil, fmt.Errorf("%w: worker %d does not exist: there are %d, numbered 0 to %d", ErrBadSpec, s.Worker, s.Workers, s.Workers-1)
	}
	if s.Port < 0 || s.Port > 65535 {
		return nil, fmt.Errorf("%w: port %d is not a UDP port (1-65535; 0 for %d)", ErrBadSpec, s.Port, DefaultPort)
	}
	if s.VNIBase < 0 || s.VNIBase > MaxVNI {
		return nil, fmt.Errorf("%w: vni_base %d is outside 1-%d", ErrBadSpec, s.VNIBase, MaxVNI)
	}
	plan, err := s.resolvePlan()
	if err != nil {
		return nil, fmt.Errorf("%w: topology: %w", ErrBadSpec, err)
	}
	stableMACs(plan)
	var errs []error
	counts := make([]int, s.Workers)
	for _, pn := range plan.Nodes {
		w, ok := s.Assign[pn.Name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("node %s is assigned to no worker", pn.Name))
		case w < 0 || w >= s.Workers:
			errs = append(errs, fmt.Errorf("node %s is assigned to worker %d, which does not exist (0 to %d)", pn.Name, w, s.Workers-1))
		default:
			counts[w]++
		}
	}
	for name := range s.Assign {
		if plan.Node(name) == nil {
			errs = append(errs, fmt.Errorf("assign names node %q, which the topology does not have", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSpec, err)
	}
	if counts[s.Worker] == 0 {
		return nil, fmt.Errorf("%w: worker %d has no nodes", ErrBadSpec, s.Worker)
	}
	vnis, err := s.vnis(plan)
	if err != nil {
		return nil, err
	}
	r := &Resolved{Spec: s, Plan: plan}
	for i, l := range plan.Links {
		w1, w2 := s.Assign[l.Intf1.Node], s.Assign[l.Intf2.Node]
		if w1 == w2 || (w1 != s.Worker && w2 != s.Worker) {
			continue
		}
		vni := vnis[i]
		c := CutLink{Link: l, Index: i, VNI: vni, Local: l.Intf1, Remote: l.Intf2, Peer: w2, First: true}
		if w2 == s.Worker {
			c.Local, c.Remote, c.Peer, c.First = l.Intf2, l.Intf1, w1, false
		}
		r.Cut = append(r.Cut, c)
	}
	return r, nil
}

// NewSpec splits a topology for n workers and returns one spec per
// worker. topology and file are as in Spec. The specs share a VNI key
// drawn now: two calls for the same topology give different VNIs, so a
// caller that makes the specs again for a running cluster (a worker to
// replace) must keep the first key.
func NewSpec(topology, file string, ipbase string, autoMAC bool, n int, opts partition.Options) ([]*Spec, *partition.Result, error) {
	return NewSpecFrom("", topology, file, ipbase, autoMAC, n, opts)
}

// NewSpecFrom is NewSpec for a topology that source (Spec.Source) gave;
// "" is the local user.
func NewSpecFrom(source, topology, file string, ipbase string, autoMAC bool, n int, opts partition.Options) ([]*Spec, *partition.Result, error) {
	base := &Spec{Topology: topology, File: file, IPBase: ipbase, AutoMAC: autoMAC, Workers: n, VNIKey: NewVNIKey(), Source: source}
	// The same resolution the workers will do, so the plan agrees.
	r0, err := base.resolvePlan()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: topology: %w", ErrBadSpec, err)
	}
	opts.Parts = n
	res, err := partition.Split(r0, opts)
	if err != nil {
		return nil, nil, err
	}
	specs := make([]*Spec, n)
	for i := range specs {
		s := *base
		s.Worker = i
		s.Assign = res.Assign
		specs[i] = &s
	}
	return specs, res, nil
}

// resolvePlan loads and resolves the topology only.
func (s *Spec) resolvePlan() (*topo.Plan, error) {
	var t *topo.Topo
	var fopts topo.FileOptions
	var err error
	switch {
	case s.File != "" && s.Source != "":
		t, fopts, err = topo.LoadFrom(s.File, []byte(s.Topology), topo.RemoteFiles(s.Source))
	case s.File != "":
		t, fopts, err = topo.Load(s.File, []byte(s.Topology))
	default:
		if strings.TrimSpace(s.Topology) == "" {
			return nil, errors.New("no topology")
		}
		t, err = topo.FromSpecString(s.Topology)
	}
	if err != nil {
		return nil, err
	}
	addr := fopts.Address()
	if s.IPBase != "" {
		if addr.IPBase, err = netip.ParsePrefix(s.IPBase); err != nil {
			return nil, fmt.Errorf("ipbase %q: %v", s.IPBase, err)
		}
	}
	addr.AutoMAC = addr.AutoMAC || s.AutoMAC
	return topo.Resolve(t, addr)
}

// Part returns the topology of this worker's part: its nodes, with the
// names, ports, addresses and MACs the whole plan gave them, and the links
// between them. Cut links are left out (the VXLAN links replace them), so
// a node's first interface here may not be its first in the plan: its
// address then goes on explicitly, per link end. Routes are left out too
// and applied once the cut links exist (Routes), since they may name a
// cut link's interface or gateway.
func (r *Resolved) Part() (*topo.Topo, error) {
	s := r.Spec
	t := topo.New()
	for _, pn := range r.Plan.Nodes {
		if s.Assign[pn.Name] != s.Worker {
			continue
		}
		params := pn.Params.Clone()
		if params == nil {
			params = topo.Params{}
		}
		delete(params, "routes")
		delete(params, "defaultRoute")
		if !pn.IsSwitch() {
			delete(params, "ip")
			delete(params, "mac")
			first := pn.DefaultIntf()
			if first == nil || s.Assign[first.Link.Peer(first).Node] == s.Worker {
				// Its first interface stays its first here.
				if pn.IP.IsValid() {
					params["ip"] = pn.IP.String()
				} else {
					params["ip"] = "none"
				}
				if pn.MAC != nil {
					params["mac"] = pn.MAC.String()
				}
			} else {
				params["ip"] = "none"
			}
		}
		t.AddNode(pn.Name, pn.Kind, params)
	}
	for _, l := range r.Plan.Links {
		if s.Assign[l.Intf1.Node] != s.Worker || s.Assign[l.Intf2.Node] != s.Worker {
			continue
		}
		params := l.Params.Clone()
		if params == nil {
			params = topo.Params{}
		}
		for k, i := range map[string]*topo.Intf{"1": l.Intf1, "2": l.Intf2} {
			if i.IP.IsValid() {
				params["ip"+k] = i.IP.String()
			}
			if i.MAC != nil {
				params["mac"+k] = i.MAC.String()
			}
			params["intfName"+k] = i.Name
		}
		t.AddLinkPorts(l.Intf1.Node, l.Intf2.Node, l.Intf1.Port, l.Intf2.Port, params)
	}
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("part %d: %w", s.Worker, err)
	}
	return t, nil
}

// Routes returns a node's static routes as hymn applies them (its
// defaultRoute first), for applying once the cut links exist.
func Routes(pn *topo.PlannedNode) []string {
	var specs []string
	if dr := strings.TrimSpace(pn.Params["defaultRoute"]); dr != "" {
		specs = append(specs, "default "+dr)
	}
	for _, r := range strings.Split(pn.Params["routes"], ";") {
		if r = strings.TrimSpace(r); r != "" {
			specs = append(specs, r)
		}
	}
	return specs
}

// LocalNodes returns this worker's nodes in plan order.
func (r *Resolved) LocalNodes() []*topo.PlannedNode {
	var out []*topo.PlannedNode
	for _, pn := range r.Plan.Nodes {
		if r.Spec.Assign[pn.Name] == r.Spec.Worker {
			out = append(out, pn)
		}
	}
	return out
}

// String names a cut link for messages and reports.
func (c CutLink) String() string {
	return c.Link.String() + " (vni " + strconv.Itoa(c.VNI) + ")"
}

// JSON returns the spec as a worker reads it.
func (s *Spec) JSON() ([]byte, error) { return json.MarshalIndent(s, "", "  ") }

// stableMACs gives every interface the plan left to the kernel a MAC of
// its own derived from its node's and its own name (locally administered,
// unicast). Every worker derives the same, and a worker launched again
// (Cluster.Replace) or a cut link's side made again (Part.Relink) comes
// back with the MACs it had: its peers' neighbour tables and bridges stay
// right, as they would not with new random MACs.
func stableMACs(plan *topo.Plan) {
	for _, pn := range plan.Nodes {
		for _, i := range pn.Intfs {
			if i.MAC != nil {
				continue
			}
			h := sha256.Sum256([]byte("hymn-cluster-mac\x00" + pn.Name + "\x00" + i.Name))
			mac := net.HardwareAddr(h[:6])
			mac[0] = mac[0]&^0x01 | 0x02
			i.MAC = mac
		}
		if d := pn.DefaultIntf(); d != nil && !pn.IsSwitch() && pn.MAC == nil {
			pn.MAC = d.MAC
		}
	}
}
