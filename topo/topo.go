package topo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Kind says what a node is.
type Kind string

// The node kinds hymn knows. A router is a host with IPv4 forwarding on, as
// Mininet's LinuxRouter example makes one.
const (
	KindHost   Kind = "host"
	KindSwitch Kind = "switch"
	KindRouter Kind = "router"
)

// Params are a node's or a link's options, as Mininet passes them: string
// values keyed by Mininet's option names (ip, mac, stp, bw, delay...). Keys a
// backend does not know are ignored, as Mininet ignores them, so one topology
// drives every backend.
type Params map[string]string

// Clone returns an independent copy.
func (p Params) Clone() Params {
	if p == nil {
		return nil
	}
	out := make(Params, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// Node is one node of a topology.
type Node struct {
	Name   string
	Kind   Kind
	Params Params
	// Origin is where a file defined the node ("topo.yaml:12"), for
	// errors found after loading; empty for nodes added in Go.
	Origin string

	at *paramPos // the node's entry in the file, for ParamsError (origins.go)
}

// IsSwitch reports whether the node is a switch. Everything else counts as a
// host, as in Mininet (routers included).
func (n *Node) IsSwitch() bool { return n.Kind == KindSwitch }

// PortBase is the first port number of a node: switches start at 1 (port 0 is
// their loopback in Mininet), everything else at 0.
func (n *Node) PortBase() int {
	if n.IsSwitch() {
		return 1
	}
	return 0
}

// Link joins port Port1 of Node1 to port Port2 of Node2.
type Link struct {
	Node1, Node2 string
	Port1, Port2 int
	Params       Params
	Origin       string // where a file defined the link, as Node.Origin

	origins paramOrigins // where a file wrote its parameters (origins.go)
}

// Topo is a topology under construction. The Add methods never fail on the
// spot, so a topology reads like Mininet's build(); the first mistake is kept
// and returned by Err, and every consumer (Resolve, the network builder)
// checks it before doing anything.
type Topo struct {
	nodes    []*Node
	byName   map[string]*Node
	links    []*Link
	nextPort map[string]int
	usedPort map[string]map[int]bool
	errs     []error

	controllers []*Controller // controller.go
	// controllerKinds are a custom file's controllers dict (controller.go).
	controllerKinds map[string]Controller
}

// New returns an empty topology.
func New() *Topo {
	return &Topo{
		byName:   map[string]*Node{},
		nextPort: map[string]int{},
		usedPort: map[string]map[int]bool{},
	}
}

func (t *Topo) fail(err error) { t.errs = append(t.errs, err) }

// Err returns the mistakes made while building the topology, or nil.
func (t *Topo) Err() error { return errors.Join(t.errs...) }

// AddNode adds a node of the given kind and returns its name.
func (t *Topo) AddNode(name string, kind Kind, params Params) string {
	if err := checkNodeName(name); err != nil {
		t.fail(err)
		return name
	}
	if _, dup := t.byName[name]; dup {
		t.fail(fmt.Errorf("%w: %q is added twice", ErrDuplicateNode, name))
		return name
	}
	n := &Node{Name: name, Kind: kind, Params: params.Clone()}
	if n.Params == nil {
		n.Params = Params{}
	}
	t.nodes = append(t.nodes, n)
	t.byName[name] = n
	t.nextPort[name] = n.PortBase()
	t.usedPort[name] = map[int]bool{}
	return name
}

// AddHost adds a host and returns its name.
func (t *Topo) AddHost(name string, params ...Params) string {
	return t.AddNode(name, KindHost, mergeParams(params))
}

// AddSwitch adds a switch and returns its name.
func (t *Topo) AddSwitch(name string, params ...Params) string {
	return t.AddNode(name, KindSwitch, mergeParams(params))
}

// AddRouter adds a router (a host that forwards IPv4) and returns its name.
func (t *Topo) AddRouter(name string, params ...Params) string {
	return t.AddNode(name, KindRouter, mergeParams(params))
}

// AddLink links two nodes on their next free ports, as Mininet's addLink
// does: ports are numbered when the link is added.
func (t *Topo) AddLink(node1, node2 string, params ...Params) *Link {
	return t.AddLinkPorts(node1, node2, -1, -1, params...)
}

// AddLinkPorts links two nodes on the given ports; a negative port means the
// node's next free port.
func (t *Topo) AddLinkPorts(node1, node2 string, port1, port2 int, params ...Params) *Link {
	l := &Link{Node1: node1, Node2: node2, Params: mergeParams(params)}
	if l.Params == nil {
		l.Params = Params{}
	}
	for _, name := range []string{node1, node2} {
		if _, ok := t.byName[name]; !ok {
			t.fail(fmt.Errorf("link %s<->%s: %w %q", node1, node2, ErrUnknownNode, name))
			return l
		}
	}
	if node1 == node2 {
		t.fail(fmt.Errorf("link %s<->%s: a node cannot be linked to itself", node1, node2))
		return l
	}
	var err error
	if l.Port1, err = t.takePort(node1, port1); err != nil {
		t.fail(err)
		return l
	}
	if l.Port2, err = t.takePort(node2, port2); err != nil {
		t.fail(err)
		return l
	}
	t.links = append(t.links, l)
	return l
}

// takePort reserves a port, following Mininet's newPort: an explicit port
// moves the counter past it, so later automatic ports do not collide.
func (t *Topo) takePort(node string, port int) (int, error) {
	if port < 0 {
		port = t.nextPort[node]
		for t.usedPort[node][port] {
			port++
		}
	}
	if t.usedPort[node][port] {
		return 0, fmt.Errorf("node %s: port %d is used twice", node, port)
	}
	t.usedPort[node][port] = true
	if port >= t.nextPort[node] {
		t.nextPort[node] = port + 1
	}
	return port, nil
}

// Node returns the named node, or nil.
func (t *Topo) Node(name string) *Node { return t.byName[name] }

// Nodes returns every node in natural name order (h2 before h10).
func (t *Topo) Nodes() []*Node { return sortedNodes(t.nodes, func(*Node) bool { return true }) }

// Hosts returns the nodes that are not switches, in natural order.
func (t *Topo) Hosts() []*Node {
	return sortedNodes(t.nodes, func(n *Node) bool { return !n.IsSwitch() })
}

// Switches returns the switches in natural order.
func (t *Topo) Switches() []*Node { return sortedNodes(t.nodes, (*Node).IsSwitch) }

// Links returns the links in the order they were added (which fixed the
// port numbers).
func (t *Topo) Links() []*Link { return slices.Clone(t.links) }

// SortedLinks returns the links in the order Mininet creates them: natural
// order of the (node1, node2) pair; equal pairs keep their added order.
func (t *Topo) SortedLinks() []*Link {
	out := slices.Clone(t.links)
	slices.SortStableFunc(out, func(a, b *Link) int {
		if c := naturalCompare(a.Node1, b.Node1); c != 0 {
			return c
		}
		return naturalCompare(a.Node2, b.Node2)
	})
	return out
}

// NodeCount returns the number of nodes.
func (t *Topo) NodeCount() int { return len(t.nodes) }

func sortedNodes(all []*Node, keep func(*Node) bool) []*Node {
	var out []*Node
	for _, n := range all {
		if keep(n) {
			out = append(out, n)
		}
	}
	slices.SortStableFunc(out, func(a, b *Node) int { return naturalCompare(a.Name, b.Name) })
	return out
}

func naturalCompare(a, b string) int {
	switch {
	case NaturalLess(a, b):
		return -1
	case NaturalLess(b, a):
		return 1
	}
	return 0
}

func mergeParams(ps []Params) Params {
	var out Params
	for _, p := range ps {
		for k, v := range p {
			if out == nil {
				out = Params{}
			}
			out[k] = v
		}
	}
	return out
}

// MaxNodeName bounds node names: they become part of namespace file names
// and of interface names (which the kernel limits to 15 bytes anyway).
const MaxNodeName = 64

// checkNodeName accepts the names that can become part of an interface name
// and of a namespace file name: letters, digits, '_', '.' and '-', starting
// with a letter, digit or '_' (so never an option like -h, nor . or ..).
func checkNodeName(name string) error {
	if name == "" {
		return errors.New("node name is empty")
	}
	if len(name) > MaxNodeName {
		return fmt.Errorf("node name %.20q... is %d bytes; at most %d are allowed", name, len(name), MaxNodeName)
	}
	if strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}) {
		return fmt.Errorf("node name %q: only letters, digits, '_', '.' and '-' are allowed", name)
	}
	if name[0] == '-' || name[0] == '.' {
		return fmt.Errorf("node name %q: must start with a letter, a digit or '_'", name)
	}
	return nil
}

// CheckNodeName reports whether name can name a node (see AddNode).
func CheckNodeName(name string) error { return checkNodeName(name) }

// CheckIntfName reports whether name can name an interface: 1 to
// MaxIntfName bytes of letters, digits, '_', '.', '-' and '@', not starting
// with '-' or '.' (the kernel refuses '.', '..', '/', ':' and blanks; hymn
// also keeps names that read as options or paths out).
func CheckIntfName(name string) error {
	if name == "" {
		return errors.New("interface name is empty")
	}
	if len(name) > MaxIntfName {
		return fmt.Errorf("interface name %.20q is %d bytes; Linux allows at most %d", name, len(name), MaxIntfName)
	}
	if strings.ContainsFunc(name, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' || r == '@')
	}) {
		return fmt.Errorf("interface name %q: only letters, digits, '_', '.', '-' and '@' are allowed", name)
	}
	if name[0] == '-' || name[0] == '.' {
		return fmt.Errorf("interface name %q: must not start with '-' or '.'", name)
	}
	return nil
}
