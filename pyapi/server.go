package pyapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// ProtocolVersion is the version the hello line announces. A client
// speaking another version is refused with a message naming both.
const ProtocolVersion = 1

// RequestGrace is how long requests still running when the connection
// ends may take before the network is stopped anyway.
var RequestGrace = 10 * time.Second

// MaxLine bounds one request line: a topology of thousands of nodes fits,
// a runaway client does not exhaust memory.
const MaxLine = 64 << 20

// Config configures a server.
type Config struct {
	// Keep leaves the network running when the connection ends (hymn
	// clean removes it later).
	Keep bool
	// Version is hymn's version, for the hello line.
	Version string
	// Debug receives one line per request when non-nil.
	Debug io.Writer
	// Stderr, when non-nil, receives notices for the script's user (a
	// low-level API network that stays because processes outlived the
	// script in it).
	Stderr io.Writer
	// Started, when non-nil, runs once the network is built (the live
	// view); the function it returns runs before the network stops. Its
	// error fails the build.
	Started func(*hymn.Network) (stop func(), err error)
}

// Server serves one client's network.
type Server struct {
	cfg Config

	mu      sync.Mutex // the network pointer and stopped
	net     *hymn.Network
	stopped bool
	// lowLevel: the network of Mininet's low-level API, which has no
	// stop(); it stays when the connection ends if processes outlived
	// the script in it (lingerers).
	lowLevel bool
	unstart  func() // Config.Started's stop, once the network is built

	wmu sync.Mutex // one answer line at a time
	w   *bufio.Writer
}

type request struct {
	ID   int64           `json:"id"`
	Op   string          `json:"op"`
	Args json.RawMessage `json:"args"`
}

type response struct {
	ID     int64  `json:"id"`
	OK     bool   `json:"ok"`
	Result any    `json:"result,omitempty"`
	Error  string `json:"error,omitempty"`
	// Kind classifies an error for the client: "usage" (bad request),
	// "unsupported" (the client raises NotImplementedError), "network"
	// (the kernel or a tool failed), "state" (not built, already stopped).
	Kind string `json:"kind,omitempty"`
}

// errUnsupported marks what hymn does not do; the message says what to
// use instead.
var errUnsupported = errors.New("unsupported")

// errUsage marks a malformed request.
var errUsage = errors.New("bad request")

// Hello is the first line the server writes.
type Hello struct {
	Hello    string `json:"hello"` // always "hymn-pyapi"
	Version  int    `json:"version"`
	Hymn     string `json:"hymn"`
	PID      int    `json:"pid"`
	Keep     bool   `json:"keep"`
	Required string `json:"first_request"` // what the client sends first
	// LinkKeys are the options a TCIntf's config hands to the emulator
	// (linkparams.IntfKeys): the package takes them from here, so a
	// parameter added to hymn's table needs no edit of the package.
	LinkKeys []string `json:"link_keys"`
}

// Serve answers requests on conn until it ends or ctx does, then (unless
// Keep) stops the network. It returns the teardown's error, if any.
func Serve(ctx context.Context, conn io.ReadWriteCloser, cfg Config) error {
	s := &Server{cfg: cfg, w: bufio.NewWriter(conn)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// A cancelled ctx (parent died, signal) ends the read loop.
		<-ctx.Done()
		_ = conn.Close()
	}()
	s.write(Hello{Hello: "hymn-pyapi", Version: ProtocolVersion, Hymn: cfg.Version, PID: os.Getpid(), Keep: cfg.Keep, Required: "hello", LinkKeys: linkparams.IntfKeys()})
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine)
	var wg sync.WaitGroup
	greeted := false
	for sc.Scan() {
		var req request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			s.answer(req.ID, nil, fmt.Errorf("%w: not a JSON request: %v", errUsage, err))
			continue
		}
		if !greeted {
			greeted = req.Op == "hello"
			if !greeted {
				s.answer(req.ID, nil, fmt.Errorf("%w: the first request must be hello with the protocol version", errUsage))
				continue
			}
		}
		if req.Op == "hello" {
			res, err := s.hello(req.Args)
			s.answer(req.ID, res, err)
			if err != nil {
				break
			}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if s.cfg.Debug != nil {
				_, _ = fmt.Fprintf(s.cfg.Debug, "pyserve: %s %s\n", req.Op, truncate(string(req.Args), 200))
			}
			res, err := s.handle(ctx, req.Op, req.Args)
			s.answer(req.ID, res, err)
		}()
	}
	cancel()
	// Requests still running get a while to see the cancelled context;
	// one stuck in a tool must not keep the network alive for ever.
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(RequestGrace):
	}
	if cfg.Keep {
		return nil
	}
	s.mu.Lock()
	lowLevel := s.lowLevel
	s.mu.Unlock()
	if lowLevel {
		if procs := s.lingerers(); len(procs) > 0 {
			if cfg.Stderr != nil {
				var names []string
				for _, p := range procs {
					names = append(names, fmt.Sprintf("%s in %s (pid %d)", p.Command, p.Node, p.PID))
				}
				_, _ = fmt.Fprintf(cfg.Stderr, "*** hymn: %s still running: the network stays after the script, as Mininet's namespaces do; hymn clean removes it\n", strings.Join(names, ", "))
			}
			return nil
		}
	}
	return s.stop()
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

func (s *Server) write(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(response{OK: false, Error: "encoding the answer: " + err.Error(), Kind: "network"})
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// A write error means the client is gone; the read loop sees it.
	_, _ = s.w.Write(append(data, '\n'))
	_ = s.w.Flush()
}

func (s *Server) answer(id int64, res any, err error) {
	if err == nil {
		s.write(response{ID: id, OK: true, Result: res})
		return
	}
	kind := "network"
	switch {
	case errors.Is(err, errUnsupported):
		kind = "unsupported"
	case errors.Is(err, errUsage), errors.Is(err, topo.ErrUnknownNode), errors.Is(err, hymn.ErrLinkParams):
		kind = "usage"
	case errors.Is(err, hymn.ErrNotBuilt):
		kind = "state"
	}
	s.write(response{ID: id, OK: false, Error: err.Error(), Kind: kind})
}

func (s *Server) hello(raw json.RawMessage) (any, error) {
	var a struct {
		Version int `json:"version"`
	}
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if a.Version != ProtocolVersion {
		return nil, fmt.Errorf("%w: client speaks protocol version %d, this hymn speaks %d: use the mininet package of this hymn (hymn python --path)", errUsage, a.Version, ProtocolVersion)
	}
	return map[string]any{"version": ProtocolVersion}, nil
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%w: arguments: %v", errUsage, err)
	}
	return nil
}

// network returns the built network, or an error naming the op.
func (s *Server) network(op string) (*hymn.Network, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.net == nil {
		return nil, fmt.Errorf("%s: %w (build it first)", op, hymn.ErrNotBuilt)
	}
	if s.stopped {
		return nil, fmt.Errorf("%s: the network was stopped", op)
	}
	return s.net, nil
}

func (s *Server) stop() error {
	s.mu.Lock()
	n := s.net
	already := s.stopped
	s.stopped = true
	unstart := s.unstart
	s.mu.Unlock()
	if n == nil || already {
		return nil
	}
	if unstart != nil {
		unstart()
	}
	return n.Stop()
}

func (s *Server) handle(ctx context.Context, op string, raw json.RawMessage) (any, error) {
	switch op {
	case "build":
		return s.build(ctx, raw)
	case "start":
		n, err := s.network(op)
		if err != nil {
			return nil, err
		}
		if err := n.Start(ctx); err != nil {
			return nil, err
		}
		return nil, writeTargets(n)
	case "stop":
		return nil, s.stop()
	case "info":
		n, err := s.network(op)
		if err != nil {
			return nil, err
		}
		return networkInfo(n), nil
	case "addNode":
		return s.addNode(ctx, raw)
	case "addLink":
		return s.addLink(ctx, raw)
	case "delNode":
		return nil, s.delNode(ctx, raw)
	case "delLink":
		var a struct{ Node1, Node2, Intf1 string }
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		n, err := s.network(op)
		if err != nil {
			return nil, err
		}
		return nil, n.DeleteLink(ctx, a.Node1, a.Node2, a.Intf1)
	case "switchControllers":
		return nil, s.switchControllers(ctx, raw)
	case "setLink":
		return s.setLink(raw)
	case "linkStatus":
		var a struct{ Node1, Node2, Status string }
		if err := decode(raw, &a); err != nil {
			return nil, err
		}
		n, err := s.network(op)
		if err != nil {
			return nil, err
		}
		return nil, n.ConfigLinkStatus(a.Node1, a.Node2, a.Status)
	case "ping":
		return s.ping(ctx, raw)
	case "iperf":
		return s.iperf(ctx, raw)
	case "cmd":
		return s.cmd(ctx, raw)
	case "waitConnected":
		n, err := s.network(op)
		if err != nil {
			return nil, err
		}
		return nil, n.WaitConnected(ctx)
	case "adoptIntf":
		return s.adoptIntf(ctx, raw)
	case "lowLevel":
		s.mu.Lock()
		s.lowLevel = true
		s.mu.Unlock()
		return nil, nil
	case "clean":
		rep, err := hymn.Clean(ctx, hymn.CleanOptions{})
		return map[string]any{"runs": rep.Runs}, err
	}
	return nil, fmt.Errorf("%w: unknown op %q", errUsage, op)
}

// delNode removes a host or switch from the running network (net.delHost,
// net.delSwitch). Controllers run until the network stops.
func (s *Server) delNode(ctx context.Context, raw json.RawMessage) error {
	var a struct{ Name string }
	if err := decode(raw, &a); err != nil {
		return err
	}
	n, err := s.network("delNode")
	if err != nil {
		return err
	}
	if slices.Contains(n.ControllerNames(), a.Name) {
		return fmt.Errorf("%w: deleting controller %s from a running network: hymn's controllers run until the network stops (net.stop())", errUnsupported, a.Name)
	}
	return n.DeleteNode(ctx, a.Name)
}

// switchControllers connects an OpenFlow switch to the named controllers
// only (switch.start([c1])). A switch hymn runs without OpenFlow (a
// Linux bridge under --switch lxbr) ignores them, as Mininet's
// LinuxBridge.start does.
func (s *Server) switchControllers(ctx context.Context, raw json.RawMessage) error {
	var a struct {
		Name        string
		Controllers []string
	}
	if err := decode(raw, &a); err != nil {
		return err
	}
	n, err := s.network("switchControllers")
	if err != nil {
		return err
	}
	if n.OVS() == nil || n.OVS().Bridge(a.Name) == nil {
		return nil
	}
	return n.SetSwitchControllers(ctx, a.Name, a.Controllers)
}

// NodeSpec is a node of a build request.
type NodeSpec struct {
	Name   string      `json:"name"`
	Kind   topo.Kind   `json:"kind"`
	Params topo.Params `json:"params"`
}

// LinkSpec is a link of a build request; a nil port is the next free one.
type LinkSpec struct {
	Node1  string      `json:"node1"`
	Node2  string      `json:"node2"`
	Port1  *int        `json:"port1"`
	Port2  *int        `json:"port2"`
	Params topo.Params `json:"params"`
}

// ControllerSpec is a controller in mn's --controller syntax.
type ControllerSpec struct {
	Name string `json:"name"`
	Spec string `json:"spec"` // ref, ovsc, remote,ip=...,port=...
}

// BuildOptions are the network-wide choices of Mininet(...).
type BuildOptions struct {
	Switch    string `json:"switch"` // lxbr, ovsbr, ovsk, bpf
	Nodes     string `json:"nodes"`  // netns, vm
	Links     string `json:"links"`  // veth, sriov[,...]
	IPBase    string `json:"ipBase"` // 10.0.0.0/8
	AutoMAC   bool   `json:"autoSetMacs"`
	StaticARP bool   `json:"autoStaticArp"`
	FailMode  string `json:"failMode"`
	Protocols string `json:"protocols"`
}

// BuildRequest is the build op's argument.
type BuildRequest struct {
	Nodes       []NodeSpec       `json:"nodes"`
	Links       []LinkSpec       `json:"links"`
	Controllers []ControllerSpec `json:"controllers"`
	Options     BuildOptions     `json:"options"`
}

func (o BuildOptions) hymnOptions() (hymn.Options, error) {
	var opts hymn.Options
	var err error
	if opts.Switch, err = hymn.ParseSwitchKind(o.Switch); err != nil {
		return opts, fmt.Errorf("%w: %v", errUsage, err)
	}
	if opts.Nodes, err = hymn.ParseNodeBackend(o.Nodes); err != nil {
		return opts, fmt.Errorf("%w: %v", errUsage, err)
	}
	if o.Links != "" {
		backend, cfg, err := hymn.ParseLinkBackend(o.Links)
		if err != nil {
			return opts, fmt.Errorf("%w: %v", errUsage, err)
		}
		opts.Links = backend
		if backend == hymn.LinksSRIOV {
			opts.SRIOV = &cfg
		}
	}
	if o.IPBase != "" {
		p, err := netip.ParsePrefix(o.IPBase)
		if err != nil {
			return opts, fmt.Errorf("%w: ipBase %q: %v", errUsage, o.IPBase, err)
		}
		opts.IPBase = p
	}
	opts.AutoMAC = o.AutoMAC
	opts.FailMode, opts.Protocols = o.FailMode, o.Protocols
	return opts, nil
}

func (s *Server) build(ctx context.Context, raw json.RawMessage) (any, error) {
	var req BuildRequest
	if err := decode(raw, &req); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.net != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: build: the network was already built (add nodes and links to it live)", errUsage)
	}
	s.mu.Unlock()
	opts, err := req.Options.hymnOptions()
	if err != nil {
		return nil, err
	}
	t := topo.New()
	for _, nd := range req.Nodes {
		kind := nd.Kind
		if kind == "" {
			kind = topo.KindHost
		}
		t.AddNode(nd.Name, kind, nd.Params)
	}
	for _, l := range req.Links {
		p1, p2 := -1, -1
		if l.Port1 != nil {
			p1 = *l.Port1
		}
		if l.Port2 != nil {
			p2 = *l.Port2
		}
		t.AddLinkPorts(l.Node1, l.Node2, p1, p2, l.Params)
	}
	for _, c := range req.Controllers {
		ctl, err := topo.ParseController(c.Name, c.Spec)
		if err != nil {
			return nil, fmt.Errorf("%w: controller %s: %v", errUsage, c.Name, err)
		}
		t.AddControllerSpec(ctl)
	}
	n, err := hymn.New(t, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	// The network is known before Build returns, so a connection that ends
	// during a long build (VMs) still tears down what was made.
	s.mu.Lock()
	s.net = n
	s.mu.Unlock()
	if err := n.Build(ctx); err != nil {
		return nil, err
	}
	if req.Options.StaticARP {
		if err := n.StaticARP(ctx); err != nil {
			return nil, err
		}
	}
	if s.cfg.Started != nil {
		unstart, err := s.cfg.Started(n)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.unstart = unstart
		s.mu.Unlock()
	}
	return networkInfo(n), nil
}

// IntfInfo describes one interface of a node.
type IntfInfo struct {
	Name     string `json:"name"`
	Port     int    `json:"port"`
	IP       string `json:"ip,omitempty"`
	Prefix   int    `json:"prefixLen,omitempty"`
	MAC      string `json:"mac,omitempty"`
	PeerNode string `json:"peerNode,omitempty"`
	PeerIntf string `json:"peerIntf,omitempty"`
}

// NodeInfo describes one node of the running network.
type NodeInfo struct {
	Name    string    `json:"name"`
	Kind    topo.Kind `json:"kind"`
	Backend string    `json:"backend"` // netns or vm
	OwnNS   bool      `json:"ownNamespace"`
	// Cgroups are a CPU-limited host's cgroup directories (cgroup v2's
	// one, or v1's cpu and cpuset), which its shell joins.
	Cgroups []string `json:"cgroups,omitempty"`
	// Namespace is the node's namespace (an OpenFlow switch's is the
	// switches' shared one); OVSDir, for those, is where their
	// ovsdb-server's socket is (OVS_RUNDIR for ovs-vsctl in its shell).
	Namespace string     `json:"namespace,omitempty"`
	OVSDir    string     `json:"ovsDir,omitempty"`
	Intfs     []IntfInfo `json:"intfs"`
}

// NetworkInfo is what build and info answer.
type NetworkInfo struct {
	Run         string     `json:"run"`
	Nodes       []NodeInfo `json:"nodes"`
	Controllers []string   `json:"controllers"`
}

func networkInfo(n *hymn.Network) NetworkInfo {
	out := NetworkInfo{Run: n.RunID(), Controllers: n.ControllerNames()}
	for _, p := range n.Plan().Nodes {
		out.Nodes = append(out.Nodes, nodeInfo(n, p))
	}
	return out
}

// CgroupRoot is where cgroups are mounted (v2, or v1's hierarchies).
var CgroupRoot = "/sys/fs/cgroup"

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func nodeInfo(n *hymn.Network, p *topo.PlannedNode) NodeInfo {
	ni := NodeInfo{Name: p.Name, Kind: p.Kind, Backend: "netns"}
	node, err := n.Node(p.Name)
	var ns *nodes.NsNode
	if err == nil {
		ns, _ = node.(*nodes.NsNode)
		if ns == nil {
			ni.Backend = "vm"
		}
		ni.OwnNS = node.Namespace() == owner.NamespaceName(n.RunID(), p.Name)
		ni.Namespace = node.Namespace()
		if o := n.OVS(); o != nil && p.IsSwitch() && node.Namespace() == o.Namespace() {
			ni.OVSDir = o.Dir()
		}
		for _, sub := range []string{"", "cpu", "cpuset"} {
			if dir := filepath.Join(CgroupRoot, sub, node.Namespace()); ni.OwnNS && dirExists(dir) {
				ni.Cgroups = append(ni.Cgroups, dir)
			}
		}
	}
	for _, i := range p.Intfs {
		ii := IntfInfo{Name: i.Name, Port: i.Port}
		if i.IP.IsValid() {
			ii.IP, ii.Prefix = i.IP.Addr().String(), i.IP.Bits()
		}
		if i.MAC != nil {
			ii.MAC = i.MAC.String()
		} else if ns != nil && ni.OwnNS {
			_ = ns.Netlink(func(h *netlink.Handle) error {
				l, err := h.LinkByName(i.Name)
				if err == nil {
					ii.MAC = l.Attrs().HardwareAddr.String()
				}
				return nil
			})
		}
		if i.Link != nil {
			peer := i.Link.Peer(i)
			ii.PeerNode, ii.PeerIntf = peer.Node, peer.Name
		}
		ni.Intfs = append(ni.Intfs, ii)
	}
	return ni
}

func (s *Server) addNode(ctx context.Context, raw json.RawMessage) (any, error) {
	var a NodeSpec
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	n, err := s.network("addNode")
	if err != nil {
		return nil, err
	}
	if a.Kind == "" {
		a.Kind = topo.KindHost
	}
	if err := n.AddNode(ctx, a.Name, a.Kind, a.Params); err != nil {
		return nil, err
	}
	return nodeInfo(n, n.Plan().Node(a.Name)), nil
}

func (s *Server) addLink(ctx context.Context, raw json.RawMessage) (any, error) {
	var a LinkSpec
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	n, err := s.network("addLink")
	if err != nil {
		return nil, err
	}
	if a.Port1 != nil || a.Port2 != nil {
		// The Go API numbers a live link's ports itself.
		p1, p2 := n.Plan().Node(a.Node1), n.Plan().Node(a.Node2)
		if p1 != nil && p2 != nil && (a.Port1 != nil && *a.Port1 != nextPort(p1) || a.Port2 != nil && *a.Port2 != nextPort(p2)) {
			return nil, fmt.Errorf("%w: addLink with explicit ports on a running network: hymn takes each node's next free port; leave port1/port2 out", errUnsupported)
		}
	}
	pl, err := n.AddLink(ctx, a.Node1, a.Node2, a.Params)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"intf1": pl.Intf1.Name, "intf2": pl.Intf2.Name,
		"node1": nodeInfo(n, n.Plan().Node(a.Node1)), "node2": nodeInfo(n, n.Plan().Node(a.Node2)),
	}, nil
}

// nextPort is the port AddLink gives a node's next link.
func nextPort(p *topo.PlannedNode) int {
	next := p.PortBase()
	for _, i := range p.Intfs {
		if i.Port >= next {
			next = i.Port + 1
		}
	}
	return next
}

func (s *Server) setLink(raw json.RawMessage) (any, error) {
	var a struct {
		Node1, Node2 string
		Dir          string `json:"dir"`
		Params       string `json:"params"`
	}
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	n, err := s.network("setLink")
	if err != nil {
		return nil, err
	}
	dir, err := hymn.ParseDirection(a.Dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	return nil, n.SetLinkParams(a.Node1, a.Node2, dir, a.Params)
}

// PingInfo is one ping's outcome.
type PingInfo struct {
	Src      string  `json:"src"`
	Dst      string  `json:"dst"`
	Sent     int     `json:"sent"`
	Received int     `json:"received"`
	RTTMin   float64 `json:"rttmin"` // milliseconds
	RTTAvg   float64 `json:"rttavg"`
	RTTMax   float64 `json:"rttmax"`
	RTTMdev  float64 `json:"rttdev"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (s *Server) ping(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Hosts   []string `json:"hosts"`
		Timeout float64  `json:"timeout"` // seconds; 0 for the default
		// Addrs are the addresses the script knows hosts by where
		// hymn did not give them (a setIP after the build).
		Addrs map[string]string `json:"addrs"`
	}
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	n, err := s.network("ping")
	if err != nil {
		return nil, err
	}
	if len(a.Addrs) > 0 {
		return pingAddrs(ctx, n, a.Hosts, a.Addrs, time.Duration(a.Timeout*float64(time.Second)))
	}
	res, err := n.PingFull(ctx, a.Hosts, time.Duration(a.Timeout*float64(time.Second)))
	if err != nil {
		return nil, err
	}
	out := make([]PingInfo, len(res))
	for i, r := range res {
		out[i] = PingInfo{r.Src, r.Dst, r.Sent, r.Received, ms(r.RTTMin), ms(r.RTTAvg), ms(r.RTTMax), ms(r.RTTMdev)}
	}
	return out, nil
}

func (s *Server) iperf(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Client, Server string
		Seconds        float64 `json:"seconds"`
		UDPBw          string  `json:"udpBw"`
		UDP            bool    `json:"udp"`
	}
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	n, err := s.network("iperf")
	if err != nil {
		return nil, err
	}
	d := time.Duration(a.Seconds * float64(time.Second))
	var r hymn.IperfResult
	if a.UDP {
		r, err = n.IperfUDP(ctx, a.UDPBw, a.Client, a.Server, d)
	} else {
		r, err = n.Iperf(ctx, a.Client, a.Server, d)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"client": r.Client, "server": r.Server, "serverBps": r.ServerBps, "clientBps": r.ClientBps,
		"serverText": r.ServerText, "clientText": r.ClientText, "udpBw": r.UDPBw}, nil
}

// cmd runs a line in a node's persistent shell: the path for VM nodes,
// whose shells live in the guest (namespace nodes get a pty of their own
// through hymn exec).
func (s *Server) cmd(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Node    string  `json:"node"`
		Line    string  `json:"line"`
		Timeout float64 `json:"timeout"`
	}
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	n, err := s.network("cmd")
	if err != nil {
		return nil, err
	}
	node, err := n.Node(a.Node)
	if err != nil {
		return nil, err
	}
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(a.Timeout*float64(time.Second)))
		defer cancel()
	}
	out, err := node.Cmd(ctx, a.Line)
	return map[string]any{"output": out}, err
}

// Listen makes the server's socket at path, whose directory must exist,
// be a directory (not a link to one) owned by root or this user and be
// closed to others (0700): the socket is the network's remote control.
func Listen(path string) (net.Listener, error) {
	dir := path[:max(strings.LastIndex(path, "/"), 0)]
	if dir == "" {
		dir = "."
	}
	// Lstat: a symbolic link would let its owner point it elsewhere
	// after the check.
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("socket directory: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("socket directory %s is not a directory (%v)", dir, st.Mode().Type())
	}
	if st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("socket directory %s is open to other users (mode %v): it must be 0700", dir, st.Mode().Perm())
	}
	// A 0700 directory of another user's is theirs to swap the socket
	// in: it must be root's or ours.
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("socket directory %s belongs to uid %d: it must be root's or this user's", dir, sys.Uid)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	return ln, nil
}

// adoptIntf moves an interface of the machine (Mininet's
// Intf("eth1", node=h1)) into a namespace node, keeping its name, and
// gives it an address. The namespace's deletion at Stop hands a physical
// interface back to the root namespace and removes a virtual one, as
// Mininet's cleanup does.
func (s *Server) adoptIntf(ctx context.Context, raw json.RawMessage) (any, error) {
	var a struct {
		Node string `json:"node"`
		Name string `json:"name"`
		IP   string `json:"ip"`
	}
	if err := decode(raw, &a); err != nil {
		return nil, err
	}
	if err := topo.CheckIntfName(a.Name); err != nil {
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	n, err := s.network("adoptIntf")
	if err != nil {
		return nil, err
	}
	node, err := n.Node(a.Node)
	if err != nil {
		return nil, err
	}
	var addr *netlink.Addr
	if a.IP != "" {
		ip := a.IP
		if !strings.Contains(ip, "/") {
			ip += "/8"
		}
		if addr, err = netlink.ParseAddr(ip); err != nil {
			return nil, fmt.Errorf("%w: Intf(%s): ip %q: %v", errUsage, a.Name, a.IP, err)
		}
	}
	link, err := netlink.LinkByName(a.Name)
	if err != nil {
		return nil, fmt.Errorf("%w: Intf(%s): no such interface on this machine: %v", errUsage, a.Name, err)
	}
	if g, ok := node.(nodes.GuestNode); ok {
		// A VM: the interface goes to its helper namespace and is
		// hot-plugged into the guest under the same name.
		if err := netlink.LinkSetNsFd(link, int(g.NsHandle())); err != nil {
			return nil, fmt.Errorf("moving %s to %s's helper namespace: %w", a.Name, a.Node, err)
		}
		var ip netip.Prefix
		if addr != nil {
			bits, _ := addr.Mask.Size()
			ip = netip.PrefixFrom(netip.MustParseAddr(addr.IP.String()), bits)
		}
		if err := g.AttachIntf(ctx, a.Name, link.Attrs().HardwareAddr, ip); err != nil {
			return nil, fmt.Errorf("hot-plugging %s into %s: %w", a.Name, a.Node, err)
		}
		return adopted(n, a.Node, a.Name, addr), nil
	}
	ns, ok := node.(*nodes.NsNode)
	if !ok {
		return nil, fmt.Errorf("%w: Intf(%s, node=%s): node %s has no namespace of its own", errUnsupported, a.Name, a.Node, a.Node)
	}
	if err := netlink.LinkSetNsFd(link, int(ns.NsHandle())); err != nil {
		return nil, fmt.Errorf("moving %s into %s: %w", a.Name, a.Node, err)
	}
	err = ns.Netlink(func(h *netlink.Handle) error {
		l, err := h.LinkByName(a.Name)
		if err != nil {
			return err
		}
		if addr != nil {
			if err := h.AddrReplace(l, addr); err != nil {
				return err
			}
		}
		if err := h.LinkSetUp(l); err != nil {
			return err
		}
		if node.Kind() != topo.KindSwitch {
			return nil
		}
		if o := n.OVS(); o != nil && ns.Namespace() == o.Namespace() {
			// An OpenFlow switch's port: added to its bridge in the
			// switches' ovsdb, bounded in time.
			vctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			defer cancel()
			_, err := o.Vsctl(vctx, "--may-exist", "add-port", a.Node, a.Name)
			return err
		}
		return ns.AttachPort(a.Name)
	})
	if err != nil {
		return nil, fmt.Errorf("configuring %s in %s: %w", a.Name, a.Node, err)
	}
	return adopted(n, a.Node, a.Name, addr), nil
}

// adopted is a node's info with an adopted interface, which hymn's plan
// does not list.
func adopted(n *hymn.Network, node, intf string, addr *netlink.Addr) NodeInfo {
	info := nodeInfo(n, n.Plan().Node(node))
	ii := IntfInfo{Name: intf}
	if addr != nil {
		ii.IP = addr.IP.String()
		ii.Prefix, _ = addr.Mask.Size()
	}
	return NodeInfo{Name: info.Name, Kind: info.Kind, Backend: info.Backend, OwnNS: info.OwnNS,
		Cgroups: info.Cgroups, Namespace: info.Namespace, OVSDir: info.OVSDir, Intfs: append(info.Intfs, ii)}
}
