package topo

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// FileOptions are the settings a topology file may carry besides the
// topology itself. The command line's flags take precedence over them.
type FileOptions struct {
	IPBase   netip.Prefix // options.ipbase; invalid when the file does not set it
	AutoMAC  bool         // options.mac: true
	Warnings []string     // things the file asked for that hymn ignores (MiniEdit files)
	// Routing is options.routing (none, static, ospf): how routers get
	// their routes; empty when the file does not say (docs/routing.md).
	Routing string
	// IPv6 is options.ipv6: true, IPBase6 options.ipbase6 (invalid when
	// not set): every host and router interface gets an IPv6 address too.
	IPv6    bool
	IPBase6 netip.Prefix
}

// Address returns the address options the file asks for.
func (o FileOptions) Address() AddressOptions {
	return AddressOptions{IPBase: o.IPBase, AutoMAC: o.AutoMAC}
}

// FileError is a mistake at a place in a topology file. Field is the path of
// the offending value, such as "nodes[2].kind" or "links[0].a.port".
type FileError = yamlpos.Error

// doc is a topology file being read: the position-tracking walker and the
// limits on what it may hold.
type doc struct {
	*yamlpos.Doc
	lim Limits // node and link counts are checked before they are read
}

type pair = yamlpos.Pair

// The keys the hymn file format accepts, by place. schema/topology.schema.json
// lists the same keys; a test keeps the two in step.
var (
	topLevelKeys  = []string{"name", "description", "options", "defaults", "nodes", "links", "controllers", "placement"}
	optionKeys    = []string{"ipbase", "mac", "routing", "ipv6", "ipbase6"}
	defaultKeys   = []string{"node", "host", "switch", "router", "link"}
	nodeKeys      = []string{"name", "kind", "backend", "ip", "mac", "routes", "routing", "params", "placement"}
	routingModes  = []string{"none", "static"}
	linkKeys      = []string{"endpoints", "a", "b", "kind", "params", "a>b", "b>a", "schedule"}
	endpointKeys  = []string{"node", "port", "intf", "ip", "mac"}
	nodeKinds     = []string{string(KindHost), string(KindSwitch), string(KindRouter)}
	nodeBackends  = []string{"netns", "vm"}
	directionKeys = []string{"a>b", "b>a"}
)

// LoadFile reads a topology in hymn's YAML or JSON format (JSON is YAML, so
// one loader serves both). Every mistake is reported with the file, line and
// field; nothing is returned unless the whole file is right.
func LoadFile(path string) (*Topo, FileOptions, error) { return LoadFileWith(path, Limits{}) }

// LoadFileWith is LoadFile within lim: a file above lim.MaxFileSize is
// refused without being read further (so /dev/zero does not hang).
func LoadFileWith(path string, lim Limits) (*Topo, FileOptions, error) {
	data, err := readLimited(path, lim.maxFileSize())
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, FileOptions{}, err
		}
		return nil, FileOptions{}, fmt.Errorf("reading topology file: %w", err)
	}
	return loadWith(path, data, lim, LocalFiles(filepath.Dir(path)))
}

// Load parses a topology file's contents; name is used in error messages.
// The files it names (a link's trace and schedule) are the local user's,
// relative to name's directory; LoadFrom reads a topology from elsewhere.
func Load(name string, data []byte) (*Topo, FileOptions, error) {
	return loadWith(name, data, Limits{}, LocalFiles(filepath.Dir(name)))
}

// LoadFrom is Load for a topology whose file names files resolves: with
// RemoteFiles (a Topology resource's text) a trace, schedule file, or a VM
// node's kernel, initrd, image or hostfs is refused, naming the field,
// before any file is touched.
func LoadFrom(name string, data []byte, files Files) (*Topo, FileOptions, error) {
	if files == nil {
		files = RemoteFiles("")
	}
	return loadWith(name, data, Limits{}, files)
}

func loadWith(name string, data []byte, lim Limits, files Files) (*Topo, FileOptions, error) {
	d := &doc{Doc: &yamlpos.Doc{File: name}, lim: lim}
	root, err := d.Parse(data)
	if err != nil {
		return nil, FileOptions{}, err
	}
	l := &fileLoader{doc: d, t: New(), files: files, nodeLine: map[string]int{}, badNodes: map[string]bool{}}
	opts := l.load(root)
	if len(d.Errs) > 0 {
		return nil, FileOptions{}, errors.Join(d.Errs...)
	}
	if err := l.t.Err(); err != nil {
		// Every Topo mistake is caught above with its position; this is a
		// safety net so a topology with errors is never returned.
		return nil, FileOptions{}, &FileError{File: name, Err: err}
	}
	return l.t, opts, nil
}

// fileLoader turns the document into a Topo.
type fileLoader struct {
	*doc
	t        *Topo
	files    Files             // resolves the file names the topology gives
	defaults map[string]Params // node, host, switch, router, link
	nodeLine map[string]int    // where each node is defined
	badNodes map[string]bool   // named but refused: links to them are not reported again
}

func (l *fileLoader) load(root *yaml.Node) FileOptions {
	var opts FileOptions
	top, ok := l.Mapping(root, "")
	if !ok {
		return opts
	}
	l.CheckKeys(top, "", topLevelKeys)
	byKey := map[string]pair{}
	for _, p := range top {
		byKey[p.Key] = p
	}
	for _, k := range []string{"name", "description"} {
		if p, ok := byKey[k]; ok {
			l.Str(p.Val, k)
		}
	}
	if p, ok := byKey["options"]; ok && !yamlpos.IsNull(p.Val) {
		opts = l.options(p.Val)
	}
	l.defaults = map[string]Params{}
	if p, ok := byKey["defaults"]; ok && !yamlpos.IsNull(p.Val) {
		if ps, ok := l.Mapping(p.Val, "defaults"); ok {
			l.CheckKeys(ps, "defaults", defaultKeys)
			for _, q := range ps {
				pp := Params{}
				l.Params(q.Val, "defaults."+q.Key, "", pp)
				l.defaults[q.Key] = pp
			}
		}
	}
	p, ok := byKey["nodes"]
	if !ok || yamlpos.IsNull(p.Val) {
		l.ErrAt(root, "nodes", "the file defines no nodes (add a nodes: list)")
		return opts
	}
	l.nodes(p.Val)
	if p, ok := byKey["links"]; ok && !yamlpos.IsNull(p.Val) {
		l.links(p.Val)
	}
	if p, ok := byKey["controllers"]; ok && !yamlpos.IsNull(p.Val) {
		l.controllers(p.Val) // controller.go
	}
	if p, ok := byKey["placement"]; ok && !yamlpos.IsNull(p.Val) {
		l.placement(p.Val) // placement.go
	}
	return opts
}

func (l *fileLoader) options(n *yaml.Node) FileOptions {
	var opts FileOptions
	ps, ok := l.Mapping(n, "options")
	if !ok {
		return opts
	}
	l.CheckKeys(ps, "options", optionKeys)
	for _, p := range ps {
		field := "options." + p.Key
		switch p.Key {
		case "ipbase":
			s, ok := l.Str(p.Val, field)
			if !ok {
				continue
			}
			pfx, err := netip.ParsePrefix(s)
			if err != nil || !pfx.Addr().Is4() {
				l.ErrAt(p.Val, field, "%q is not an IPv4 network like 10.0.0.0/8", s)
				continue
			}
			opts.IPBase = pfx
		case "mac":
			opts.AutoMAC, _ = l.Boolean(p.Val, field)
		case "routing":
			if s, ok := l.Str(p.Val, field); ok {
				if !slices.Contains(routingModes, s) {
					l.ErrAt(p.Val, field, "%q is not a routing mode (use %s)", s, strings.Join(routingModes, ", "))
					continue
				}
				opts.Routing = s
			}
		case "ipv6":
			opts.IPv6, _ = l.Boolean(p.Val, field)
		case "ipbase6":
			s, ok := l.Str(p.Val, field)
			if !ok {
				continue
			}
			pfx, err := netip.ParsePrefix(s)
			if err != nil || !pfx.Addr().Is6() || pfx.Addr().Is4In6() || pfx.Bits() > 64 {
				l.ErrAt(p.Val, field, "%q is not an IPv6 network of /64 or larger like fd00::/48", s)
				continue
			}
			opts.IPBase6 = pfx
		}
	}
	return opts
}

// nodeEntry is one entry of nodes:, as a list item or a map value.
type nodeEntry struct {
	field string
	name  string
	at    *yaml.Node // where the name is written
	body  []pair     // nil for the short forms
}

func (l *fileLoader) nodes(n *yaml.Node) {
	n = yamlpos.Deref(n)
	if n != nil && !l.checkCount(n, "nodes", len(n.Content), 0) {
		return
	}
	var entries []nodeEntry
	switch {
	case n != nil && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			field := fmt.Sprintf("nodes[%d]", i)
			item = yamlpos.Deref(item)
			if item != nil && item.Kind == yaml.ScalarNode && !yamlpos.IsNull(item) {
				// The short form "- h1" is a host with the defaults.
				if name, ok := l.Str(item, field); ok {
					entries = append(entries, nodeEntry{field: field, name: name, at: item})
				}
				continue
			}
			ps, ok := l.Mapping(item, field)
			if !ok {
				continue
			}
			e := nodeEntry{field: field, body: ps, at: item}
			named, nameOK := false, false
			for _, p := range ps {
				if p.Key == "name" {
					named = true
					e.name, nameOK = l.Str(p.Val, field+".name")
					e.at = yamlpos.Deref(p.Val)
				}
			}
			if !named {
				l.ErrAt(item, field, "a node needs a name")
			}
			if !nameOK {
				continue // already reported
			}
			entries = append(entries, e)
		}
	case n != nil && n.Kind == yaml.MappingNode:
		ps, _ := l.Mapping(n, "nodes")
		for _, p := range ps {
			field := "nodes." + p.Key
			e := nodeEntry{field: field, name: p.Key, at: p.KeyNode}
			if !yamlpos.IsNull(p.Val) {
				if body, ok := l.Mapping(p.Val, field); ok {
					e.body = body
					for _, q := range body {
						if q.Key == "name" {
							if s, ok := l.Str(q.Val, field+".name"); ok && s != p.Key {
								l.ErrAt(q.Val, field+".name", "name %q differs from the key %q it is listed under", s, p.Key)
							}
						}
					}
				} else {
					continue
				}
			}
			entries = append(entries, e)
		}
	default:
		l.ErrAt(n, "nodes", "must be a list of nodes or a mapping from name to node, got %s", yamlpos.KindName(n))
		return
	}
	for _, e := range entries {
		l.node(e)
	}
}

func (l *fileLoader) node(e nodeEntry) {
	if err := checkNodeName(e.name); err != nil {
		l.ErrAt(e.at, e.field+".name", "%v", err)
		l.badNodes[e.name] = true
		return
	}
	if line, dup := l.nodeLine[e.name]; dup {
		l.ErrAt(e.at, e.field+".name", "%v: %q is already defined at line %d", ErrDuplicateNode, e.name, line)
		return
	}
	kind := KindHost
	fields := Params{}
	own := Params{}
	var routes []string
	if e.body != nil {
		l.CheckKeys(e.body, e.field, nodeKeys)
		for _, p := range e.body {
			field := e.field + "." + p.Key
			switch p.Key {
			case "kind":
				if s, ok := l.Str(p.Val, field); ok {
					if !slices.Contains(nodeKinds, s) {
						l.ErrAt(p.Val, field, "%q is not a node kind (use %s)", s, strings.Join(nodeKinds, ", "))
					} else {
						kind = Kind(s)
					}
				}
			case "backend":
				if s, ok := l.Str(p.Val, field); ok {
					if !slices.Contains(nodeBackends, s) {
						l.ErrAt(p.Val, field, "%q is not a backend (use %s)", s, strings.Join(nodeBackends, ", "))
					} else {
						fields["backend"] = s
					}
				}
			case "ip":
				if s, ok := l.Str(p.Val, field); ok {
					if !strings.EqualFold(s, "none") {
						if _, err := parseIP(s, DefaultIPBase.Bits()); err != nil {
							l.ErrAt(p.Val, field, "%v", err)
							continue
						}
					}
					fields["ip"] = s
				}
			case "mac":
				if s, ok := l.macValue(p.Val, field); ok {
					fields["mac"] = s
				}
			case "routes":
				routes = l.routes(p.Val, field)
			case "routing":
				// How a router gets its routes (docs/routing.md).
				if s, ok := l.Str(p.Val, field); ok {
					if !slices.Contains(routingModes, s) {
						l.ErrAt(p.Val, field, "%q is not a routing mode (use %s)", s, strings.Join(routingModes, ", "))
					} else {
						fields["routing"] = s
					}
				}
			case "placement":
				// A worker number; its range against the worker
				// count is checked when the topology is split.
				if v, ok := l.Integer(p.Val, field); ok {
					if w, err := ParsePlacement(strconv.Itoa(v)); err != nil {
						l.ErrAt(p.Val, field, "%v", err)
					} else {
						fields[ParamPlacement] = strconv.Itoa(w)
					}
				}
			case "params":
				l.Params(p.Val, field, "", own)
			}
		}
	}
	if kind == KindSwitch {
		for _, k := range []string{"ip", "mac"} {
			if _, ok := fields[k]; ok {
				l.ErrAt(e.at, e.field+"."+k, "a switch has no address of its own; put addresses on hosts, routers or link ends")
			}
		}
		if routes != nil {
			l.ErrAt(e.at, e.field+".routes", "a switch does not route; put routes on hosts or routers")
		}
	}
	if _, ok := fields["routing"]; ok && kind != KindRouter {
		l.ErrAt(e.at, e.field+".routing", "routing applies to routers (kind: router)")
	}
	if routes != nil {
		fields["routes"] = strings.Join(routes, ";")
	}
	for k := range fields {
		if _, dup := own[k]; dup {
			l.ErrAt(e.at, e.field+".params."+k, "%s is given both as a field and in params; keep one", k)
		}
	}
	params := Params{}
	for _, src := range []Params{l.defaults["node"], l.defaults[string(kind)], own, fields} {
		for k, v := range src {
			params[k] = v
		}
	}
	if err := checkNodeParams(&Node{Name: e.name, Kind: kind, Params: params}); err != nil {
		l.ErrAt(e.at, e.field, "%v", err)
	}
	if err := checkNodeFiles(l.files, params); err != nil {
		l.ErrAt(e.at, e.field, "%v", err)
	}
	l.nodeLine[e.name] = e.at.Line
	l.addChecked(e.at, e.field, func() { l.t.AddNode(e.name, kind, params) })
	if n := l.t.Node(e.name); n != nil {
		n.Origin = fmt.Sprintf("%s:%d", l.File, e.at.Line)
		at := posOf(l.File, e.at, e.field)
		n.at = &at
	}
}

// addChecked runs a Topo method and gives any mistake it records the
// position of the entry that caused it.
func (l *fileLoader) addChecked(at *yaml.Node, field string, add func()) {
	before := len(l.t.errs)
	add()
	for _, err := range l.t.errs[before:] {
		l.ErrAt(at, field, "%v", err)
	}
}

func (d *doc) macValue(n *yaml.Node, field string) (string, bool) {
	s, ok := d.Str(n, field)
	if !ok {
		return "", false
	}
	if _, err := parseUnicastMAC(s); err != nil {
		d.ErrAt(n, field, "%v", err)
		return "", false
	}
	return s, true
}

// routes reads a list of static routes in ip-route syntax:
// "10.0.2.0/24 via 10.0.1.2", "default via 10.0.1.1", "10.0.3.0/24 dev h1-eth1".
func (l *fileLoader) routes(n *yaml.Node, field string) []string {
	n = yamlpos.Deref(n)
	var items []*yaml.Node
	switch {
	case n != nil && n.Kind == yaml.SequenceNode:
		items = n.Content
	case n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		items = []*yaml.Node{n}
	default:
		l.ErrAt(n, field, "must be a list of routes like \"10.0.2.0/24 via 10.0.1.2\", got %s", yamlpos.KindName(n))
		return nil
	}
	out := []string{}
	for i, item := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := l.Str(item, f)
		if !ok {
			continue
		}
		r, err := checkRoute(s)
		if err != nil {
			l.ErrAt(yamlpos.Deref(item), f, "%v", err)
			continue
		}
		out = append(out, r)
	}
	return out
}

// checkRoute validates a route and returns it with its spacing normalised.
func checkRoute(s string) (string, error) {
	words := strings.Fields(s)
	if len(words) == 0 {
		return "", errors.New("empty route")
	}
	if words[0] != "default" {
		if _, err := netip.ParsePrefix(words[0]); err != nil {
			return "", fmt.Errorf("route %q: destination %q is not \"default\" or a network like 10.0.2.0/24", s, words[0])
		}
	}
	rest := words[1:]
	hasNext := false
	for len(rest) > 0 {
		if len(rest) < 2 {
			return "", fmt.Errorf("route %q: %q needs a value", s, rest[0])
		}
		switch k, v := rest[0], rest[1]; k {
		case "via", "src":
			if _, err := netip.ParseAddr(v); err != nil {
				return "", fmt.Errorf("route %q: %s %q is not an IP address", s, k, v)
			}
			hasNext = hasNext || k == "via"
		case "dev":
			if err := CheckIntfName(v); err != nil {
				return "", fmt.Errorf("route %q: dev: %v", s, err)
			}
			hasNext = true
		case "metric":
			if _, err := strconv.ParseUint(v, 10, 32); err != nil {
				return "", fmt.Errorf("route %q: metric %q is not a number", s, v)
			}
		default:
			return "", fmt.Errorf("route %q: unknown word %q (use via, dev, src, metric)", s, k)
		}
		rest = rest[2:]
	}
	if !hasNext {
		return "", fmt.Errorf("route %q: says neither via nor dev", s)
	}
	return strings.Join(words, " "), nil
}

// endpoint is one end of a link.
type endpoint struct {
	node      string
	field     string
	at        *yaml.Node
	port      int
	intf      string
	ip, mac   string
	hasIP, ok bool
	hasMAC    bool
}

func (l *fileLoader) endpoint(n *yaml.Node, field string) endpoint {
	e := endpoint{port: -1, at: yamlpos.Deref(n), field: field}
	n = yamlpos.Deref(n)
	if n != nil && n.Kind == yaml.ScalarNode {
		e.node, e.ok = l.Str(n, field)
	} else {
		ps, ok := l.Mapping(n, field)
		if !ok {
			return e
		}
		l.CheckKeys(ps, field, endpointKeys)
		e.ok = true
		hasNode := false
		for _, p := range ps {
			f := field + "." + p.Key
			switch p.Key {
			case "node":
				hasNode = true
				s, ok := l.Str(p.Val, f)
				e.node, e.at = s, yamlpos.Deref(p.Val)
				e.ok = e.ok && ok
			case "port":
				v, ok := l.Integer(p.Val, f)
				if ok && v < 0 {
					l.ErrAt(p.Val, f, "port %d is negative", v)
					ok = false
				}
				e.port, e.ok = v, e.ok && ok
			case "intf":
				s, ok := l.Str(p.Val, f)
				if ok {
					if err := CheckIntfName(s); err != nil {
						l.ErrAt(p.Val, f, "%v", err)
						ok = false
					}
				}
				e.intf, e.ok = s, e.ok && ok
			case "ip":
				s, ok := l.Str(p.Val, f)
				if ok {
					if _, err := parseIP(s, DefaultIPBase.Bits()); err != nil {
						l.ErrAt(p.Val, f, "%v", err)
						ok = false
					}
				}
				e.ip, e.hasIP, e.ok = s, true, e.ok && ok
			case "mac":
				s, ok := l.macValue(p.Val, f)
				e.mac, e.hasMAC, e.ok = s, true, e.ok && ok
			}
		}
		if !hasNode {
			l.ErrAt(n, field, "a link end needs node:")
			e.ok = false
		}
	}
	if e.ok && l.t.Node(e.node) == nil {
		if !l.badNodes[e.node] {
			l.ErrAt(e.at, field, "link to undefined node %q", e.node)
		}
		e.ok = false
	}
	return e
}

func (l *fileLoader) links(n *yaml.Node) {
	n = yamlpos.Deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		l.ErrAt(n, "links", "must be a list of links, got %s", yamlpos.KindName(n))
		return
	}
	if !l.checkCount(n, "links", 0, len(n.Content)) {
		return
	}
	for i, item := range n.Content {
		l.link(yamlpos.Deref(item), fmt.Sprintf("links[%d]", i))
	}
}

func (l *fileLoader) link(n *yaml.Node, field string) {
	ps, ok := l.Mapping(n, field)
	if !ok {
		return
	}
	l.CheckKeys(ps, field, linkKeys)
	byKey := map[string]pair{}
	for _, p := range ps {
		byKey[p.Key] = p
	}
	var ends [2]endpoint
	ep, hasEP := byKey["endpoints"]
	pa, hasA := byKey["a"]
	pb, hasB := byKey["b"]
	switch {
	case hasEP && (hasA || hasB):
		l.ErrAt(n, field, "give either endpoints: or a: and b:, not both")
		return
	case hasEP:
		list := yamlpos.Deref(ep.Val)
		if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) != 2 {
			if list != nil && list.Kind == yaml.SequenceNode {
				l.ErrAt(list, field+".endpoints", "a link has exactly two ends, got %d", len(list.Content))
			} else {
				l.ErrAt(list, field+".endpoints", "must be a list of two nodes like [h1, s1], got %s", yamlpos.KindName(list))
			}
			return
		}
		ends[0] = l.endpoint(list.Content[0], field+".endpoints[0]")
		ends[1] = l.endpoint(list.Content[1], field+".endpoints[1]")
	case hasA && hasB:
		ends[0] = l.endpoint(pa.Val, field+".a")
		ends[1] = l.endpoint(pb.Val, field+".b")
	default:
		l.ErrAt(n, field, "a link needs endpoints: [n1, n2] or a: and b:")
		return
	}
	params := Params{}
	for k, v := range l.defaults["link"] {
		params[k] = v
	}
	own := Params{}
	if p, ok := byKey["params"]; ok {
		l.Params(p.Val, field+".params", "", own)
	}
	for _, dir := range directionKeys {
		if p, ok := byKey[dir]; ok {
			l.Params(p.Val, field+"."+dir, dir+".", own)
		}
	}
	if p, ok := byKey["kind"]; ok {
		// The link's kind (LinkKinds), as --links chooses veth or sriov
		// for all.
		k := yamlpos.Deref(p.Val)
		switch {
		case k == nil || k.Kind != yaml.ScalarNode:
			l.ErrAt(p.Val, field+".kind", "must be %s", linkKindWords())
		case !slices.Contains(LinkKinds, k.Value):
			l.ErrAt(k, field+".kind", "%q is not a link kind (use %s)", k.Value, linkKindWords())
		default:
			own["kind"] = k.Value
		}
	}
	l.linkSchedule(byKey, field, own) // schedule.go
	for k, v := range own {
		params[k] = v
	}
	if !ends[0].ok || !ends[1].ok {
		return
	}
	l.checkLinkParams(params, byKey, field, n)
	for i, e := range ends {
		suffix := strconv.Itoa(i + 1)
		set := func(key, v string) {
			if _, dup := own[key]; dup {
				l.ErrAt(e.at, field+".params."+key, "%s is also given on the link end; keep one", key)
			}
			params[key] = v
		}
		if e.intf != "" {
			set("intfName"+suffix, e.intf)
		}
		if e.hasIP {
			set("ip"+suffix, e.ip)
		}
		if e.hasMAC {
			set("mac"+suffix, e.mac)
		}
	}
	if ends[0].node == ends[1].node {
		l.ErrAt(ends[1].at, field, "a node cannot be linked to itself (%s)", ends[0].node)
		return
	}
	var lk *Link
	before := len(l.Errs)
	l.addChecked(n, field, func() {
		lk = l.t.AddLinkPorts(ends[0].node, ends[1].node, ends[0].port, ends[1].port, params)
	})
	if len(l.Errs) > before {
		return
	}
	lk.Origin = fmt.Sprintf("%s:%d", l.File, n.Line)
	lk.origins = l.paramOrigins(byKey, field, n)
	// Long node names make default interface names the kernel refuses;
	// say so here, where the line is known, rather than at deploy time.
	for i, e := range ends {
		if e.intf != "" {
			continue
		}
		port := lk.Port1
		if i == 1 {
			port = lk.Port2
		}
		if name := IntfName(e.node, port); len(name) > MaxIntfName {
			l.ErrAt(e.at, e.field, "interface name %s is %d bytes; Linux allows at most %d (shorten the node name or set intf:)",
				name, len(name), MaxIntfName)
		}
	}
}

// checkCount checks a list's length against the size limits before its
// entries are read (a mapping's content counts each entry twice, which
// only makes the check stricter).
func (d *doc) checkCount(n *yaml.Node, field string, nodes, links int) bool {
	if err := d.lim.CheckSize("", uint64(nodes), uint64(links)); err != nil {
		d.ErrAt(n, field, "%v", err)
		return false
	}
	return true
}

// paramOrigins records where the file wrote each of a link's parameters,
// for the checks hymn.New makes (the emulator's: delay=, bw=...): a bad
// value is then a usage error with its line, as topo's own are here.
func (l *fileLoader) paramOrigins(byKey map[string]pair, field string, at *yaml.Node) paramOrigins {
	all := posOf(l.File, at, field+".params")
	o := paramOrigins{all: &all, byKey: map[string]paramPos{}}
	for _, sect := range append([]string{"params"}, directionKeys...) {
		p, ok := byKey[sect]
		if !ok || yamlpos.IsNull(p.Val) {
			continue
		}
		ps, _ := l.Mapping(p.Val, field+"."+sect)
		for _, q := range ps {
			key := q.Key
			if sect != "params" {
				key = sect + "." + q.Key
			}
			o.byKey[key] = posOf(l.File, yamlpos.Deref(q.Val), field+"."+sect+"."+q.Key)
		}
	}
	return o
}

// checkLinkParams validates a link's own parameters (topo's: mtu, kind,
// interface names) where they are written, so a bad value is a usage error
// with its line, not a failure while links are being built.
func (l *fileLoader) checkLinkParams(params Params, byKey map[string]pair, field string, at *yaml.Node) {
	err := CheckLinkParams(params)
	if err == nil {
		return
	}
	// Point at the first value that is wrong on its own, if there is one.
	for _, sect := range append([]string{"params"}, directionKeys...) {
		p, ok := byKey[sect]
		if !ok || yamlpos.IsNull(p.Val) {
			continue
		}
		ps, _ := l.Mapping(p.Val, field+"."+sect)
		for _, q := range ps {
			key := q.Key
			if sect != "params" {
				key = sect + "." + q.Key
			}
			if one := CheckLinkParams(Params{key: params[key]}); one != nil {
				l.ErrAt(yamlpos.Deref(q.Val), field+"."+sect+"."+q.Key, "%v", one)
				return
			}
		}
	}
	l.ErrAt(at, field+".params", "%v", err)
}

// LoadAny loads a topology file by its extension: .py is a Mininet custom
// file (spec names the topology in its topos dictionary and gives its
// arguments), .mn a MiniEdit file, .graphml and .gml a Topology Zoo map
// (zoo.go), anything else hymn's YAML/JSON format
// (spec must then be empty). Warnings end up in FileOptions.Warnings.
func LoadAny(ctx context.Context, path string, spec Spec) (*Topo, FileOptions, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".py":
		t, warnings, err := LoadCustom(ctx, path, spec)
		return t, FileOptions{Warnings: warnings}, err
	case ".mn":
		if spec.Name != "" {
			return nil, FileOptions{}, fmt.Errorf("%w: %s is a MiniEdit file, which holds one topology; --topo %s does not apply", ErrBadSpec, path, spec)
		}
		return LoadMiniEdit(path)
	case ".graphml", ".gml":
		if spec.Name != "" {
			return nil, FileOptions{}, fmt.Errorf("%w: %s is a map, which holds one topology; --topo %s does not apply", ErrBadSpec, path, spec)
		}
		return LoadZoo(path, ZooOptions{})
	}
	if spec.Name != "" {
		return nil, FileOptions{}, fmt.Errorf("%w: %s is a topology file, which holds one topology; --topo %s does not apply", ErrBadSpec, path, spec)
	}
	return LoadFile(path)
}
