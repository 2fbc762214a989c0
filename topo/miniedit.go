package topo

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// LoadMiniEdit reads a topology saved by Mininet's MiniEdit (a .mn file:
// JSON with hosts, switches, controllers, links and application settings).
// What hymn cannot honour (controllers, sFlow, external interfaces...) is
// listed in FileOptions.Warnings rather than refused, so the drawing still
// runs; the ipBase of the file is returned in FileOptions.IPBase.
func LoadMiniEdit(path string) (*Topo, FileOptions, error) { return LoadMiniEditWith(path, Limits{}) }

// LoadMiniEditWith is LoadMiniEdit within lim (the file's size).
func LoadMiniEditWith(path string, lim Limits) (*Topo, FileOptions, error) {
	data, err := readLimited(path, lim.maxFileSize())
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, FileOptions{}, err
		}
		return nil, FileOptions{}, fmt.Errorf("reading MiniEdit file: %w", err)
	}
	return loadMiniEdit(path, data, lim)
}

// LoadMiniEditData parses a MiniEdit file's contents; name is used in
// messages.
func LoadMiniEditData(name string, data []byte) (*Topo, FileOptions, error) {
	return loadMiniEdit(name, data, Limits{})
}

func loadMiniEdit(name string, data []byte, lim Limits) (*Topo, FileOptions, error) {
	d := &doc{Doc: &yamlpos.Doc{File: name}, lim: lim}
	root, err := d.Parse(data)
	if err != nil {
		return nil, FileOptions{}, err
	}
	m := &mnLoader{doc: d, t: New(), nodeLine: map[string]int{}, base: DefaultIPBase}
	m.load(root)
	if len(d.Errs) > 0 {
		return nil, FileOptions{}, errors.Join(d.Errs...)
	}
	if err := m.t.Err(); err != nil {
		return nil, FileOptions{}, &FileError{File: name, Err: err}
	}
	return m.t, m.opts, nil
}

type mnLoader struct {
	*doc
	t        *Topo
	opts     FileOptions
	base     netip.Prefix
	nodeLine map[string]int
}

func (m *mnLoader) warn(format string, args ...any) {
	m.opts.Warnings = append(m.opts.Warnings, fmt.Sprintf(format, args...))
}

func (m *mnLoader) load(root *yaml.Node) {
	top, ok := m.Mapping(root, "")
	if !ok {
		return
	}
	by := map[string]pair{}
	for _, p := range top {
		by[p.Key] = p
	}
	version := "2"
	if p, ok := by["version"]; ok {
		version, _ = m.Value(p.Val, "version")
	}
	if version != "1" && version != "2" {
		m.warn("MiniEdit file version %q is not 1 or 2; reading it as version 2", version)
	}
	// The application settings come first: ipBase decides host addresses.
	if p, ok := by["application"]; ok && !yamlpos.IsNull(p.Val) {
		m.application(p.Val)
	}
	if p, ok := by["controllers"]; ok && !yamlpos.IsNull(p.Val) {
		m.controllers(p.Val)
	}
	for _, k := range []string{"hosts", "switches", "links"} {
		if _, ok := by[k]; !ok {
			m.ErrAt(root, k, "a MiniEdit file has a %s list; this one has none", k)
		}
	}
	if p, ok := by["hosts"]; ok {
		m.each(p.Val, "hosts", m.host)
	}
	if p, ok := by["switches"]; ok {
		m.each(p.Val, "switches", m.switchNode)
	}
	if p, ok := by["links"]; ok {
		m.each(p.Val, "links", m.link)
	}
}

func (m *mnLoader) each(n *yaml.Node, field string, fn func(item []pair, at *yaml.Node, field string)) {
	n = yamlpos.Deref(n)
	if yamlpos.IsNull(n) {
		return
	}
	if n.Kind != yaml.SequenceNode {
		m.ErrAt(n, field, "must be a list, got %s", yamlpos.KindName(n))
		return
	}
	nodes, links := len(n.Content), 0
	if field == "links" {
		nodes, links = 0, len(n.Content)
	}
	if !m.checkCount(n, field, nodes, links) {
		return
	}
	for i, item := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		if ps, ok := m.Mapping(item, f); ok {
			fn(ps, yamlpos.Deref(item), f)
		}
	}
}

func get(ps []pair, key string) (*yaml.Node, bool) {
	for _, p := range ps {
		if p.Key == key {
			return p.Val, true
		}
	}
	return nil, false
}

// opt returns a scalar option as text; ok is false when it is absent.
func (m *mnLoader) opt(ps []pair, key, field string) (string, bool) {
	n, ok := get(ps, key)
	if !ok || yamlpos.IsNull(n) {
		return "", false
	}
	return m.Value(n, yamlpos.JoinField(field, key))
}

func (m *mnLoader) application(n *yaml.Node) {
	ps, ok := m.Mapping(n, "application")
	if !ok {
		return
	}
	if s, ok := m.opt(ps, "ipBase", "application"); ok && s != "" {
		pfx, err := netip.ParsePrefix(s)
		if err != nil || !pfx.Addr().Is4() {
			v, _ := get(ps, "ipBase")
			m.ErrAt(yamlpos.Deref(v), "application.ipBase", "%q is not an IPv4 network like 10.0.0.0/8", s)
			return
		}
		m.base = pfx
		m.opts.IPBase = pfx
	}
	for _, k := range []string{"sflow", "netflow"} {
		if v, ok := get(ps, k); ok {
			if q, ok := m.Mapping(v, "application."+k); ok && len(q) > 0 {
				if target, ok := m.opt(q, strings.Replace(k, "netflow", "nflow", 1)+"Target", "application."+k); ok && target != "" {
					m.warn("application: %s export to %s is ignored (hymn's switches are Linux bridges)", k, target)
				}
			}
		}
	}
}

func (m *mnLoader) controllers(n *yaml.Node) {
	n = yamlpos.Deref(n)
	switch n.Kind {
	case yaml.SequenceNode:
		for i, c := range n.Content {
			f := fmt.Sprintf("controllers[%d]", i)
			ps, ok := m.Mapping(c, f)
			if !ok {
				continue
			}
			name := fmt.Sprintf("c%d", i)
			var opts []pair
			if o, ok := get(ps, "opts"); ok {
				if q, ok := m.Mapping(o, f+".opts"); ok {
					opts = q
					if s, ok := m.opt(q, "hostname", f+".opts"); ok {
						name = s
					}
				}
			}
			m.addMiniEditController(name, opts, c, f+".opts") // controller.go
		}
	case yaml.MappingNode:
		// Version 1 files hold one controller, {"c0": {...}}.
		ps, _ := m.Mapping(n, "controllers")
		for _, p := range ps {
			opts, _ := m.Mapping(p.Val, "controllers."+p.Key)
			m.addMiniEditController(p.Key, opts, p.Val, "controllers."+p.Key)
		}
	default:
		m.ErrAt(n, "controllers", "must be a list, got %s", yamlpos.KindName(n))
	}
}

// nodeName applies MiniEdit's rule: opts.hostname, else prefix+number.
func (m *mnLoader) nodeName(ps []pair, opts []pair, at *yaml.Node, field, prefix string) (name string, num int, ok bool) {
	number, hasNumber := m.opt(ps, "number", field)
	name, hasName := m.opt(opts, "hostname", field+".opts")
	if !hasName {
		if !hasNumber {
			m.ErrAt(at, field, "a node needs opts.hostname or number")
			return "", 0, false
		}
		name = prefix + number
	}
	num = -1
	if s, ok := m.opt(opts, "nodeNum", field+".opts"); ok {
		n, err := strconv.Atoi(s)
		if err != nil {
			v, _ := get(opts, "nodeNum")
			m.ErrAt(yamlpos.Deref(v), field+".opts.nodeNum", "must be an integer, got %q", s)
			return "", 0, false
		}
		num = n
	} else if hasNumber {
		n, err := strconv.Atoi(number)
		if err != nil {
			v, _ := get(ps, "number")
			m.ErrAt(yamlpos.Deref(v), field+".number", "must be a number, got %q", number)
			return "", 0, false
		}
		num = n
	}
	if err := checkNodeName(name); err != nil {
		m.ErrAt(at, field+".opts.hostname", "%v", err)
		return "", 0, false
	}
	if line, dup := m.nodeLine[name]; dup {
		m.ErrAt(at, field+".opts.hostname", "%v: %q is already defined at line %d", ErrDuplicateNode, name, line)
		return "", 0, false
	}
	m.nodeLine[name] = at.Line
	return name, num, true
}

func (m *mnLoader) nodeOpts(ps []pair, field string) []pair {
	o, ok := get(ps, "opts")
	if !ok || yamlpos.IsNull(o) {
		return nil
	}
	q, _ := m.Mapping(o, field+".opts")
	return q
}

func (m *mnLoader) host(ps []pair, at *yaml.Node, field string) {
	opts := m.nodeOpts(ps, field)
	name, num, ok := m.nodeName(ps, opts, at, field, "h")
	if !ok {
		return
	}
	params := Params{}
	if ip, ok := m.opt(opts, "ip", field+".opts"); ok && ip != "" {
		if _, err := parseIP(ip, m.base.Bits()); err != nil {
			v, _ := get(opts, "ip")
			m.ErrAt(yamlpos.Deref(v), field+".opts.ip", "%v", err)
			return
		}
		params["ip"] = ip
	} else if num >= 0 {
		// MiniEdit addresses hosts by their number, not by their order.
		ip, err := ipAdd(num, m.base)
		if err != nil {
			m.ErrAt(at, field+".opts.nodeNum", "%v", err)
			return
		}
		params["ip"] = ip.String()
	}
	if gw, ok := m.opt(opts, "defaultRoute", field+".opts"); ok && gw != "" {
		if _, err := netip.ParseAddr(gw); err != nil {
			v, _ := get(opts, "defaultRoute")
			m.ErrAt(yamlpos.Deref(v), field+".opts.defaultRoute", "%q is not an IP address", gw)
			return
		}
		params["defaultRoute"] = "via " + gw
	}
	_, hasCPU := get(opts, "cpu")
	_, hasCores := get(opts, "cores")
	for _, k := range []string{"cpu", "cores", "startCommand", "stopCommand"} {
		if v, ok := m.opt(opts, k, field+".opts"); ok && v != "" {
			params[k] = v
		}
	}
	if hasCPU || hasCores {
		if v, ok := m.opt(opts, "sched", field+".opts"); ok {
			params["sched"] = v
		}
	}
	for _, k := range []string{"startCommand", "stopCommand"} {
		if _, ok := params[k]; ok {
			m.warn("host %s: %s is kept as a parameter but not run", name, k)
		}
	}
	for _, k := range []string{"privateDirectory", "externalInterfaces", "vlanInterfaces"} {
		if v, ok := get(opts, k); ok && nonEmpty(v) {
			m.warn("host %s: %s is not supported and ignored", name, k)
		}
	}
	m.t.AddHost(name, params)
}

func nonEmpty(n *yaml.Node) bool {
	n = yamlpos.Deref(n)
	if n == nil || yamlpos.IsNull(n) {
		return false
	}
	if n.Kind == yaml.ScalarNode {
		return n.Value != ""
	}
	return len(n.Content) > 0
}

func (m *mnLoader) switchNode(ps []pair, at *yaml.Node, field string) {
	opts := m.nodeOpts(ps, field)
	prefix := "s"
	typ, _ := m.opt(opts, "switchType", field+".opts")
	name, _, ok := m.nodeName(ps, opts, at, field, prefix)
	if !ok {
		return
	}
	if typ == "legacyRouter" {
		// Saved with the switches, built by MiniEdit as a LegacyRouter host.
		m.t.AddRouter(name)
		return
	}
	params := Params{}
	if dpid, ok := m.opt(opts, "dpid", field+".opts"); ok && dpid != "" {
		params["dpid"] = dpid
	}
	switch typ {
	case "", "default", "ovs", "legacySwitch":
	case "user", "userns", "ivs":
		m.warn("switch %s: switchType %s is built as a Linux bridge", name, typ)
	default:
		m.warn("switch %s: unknown switchType %q; built as a Linux bridge", name, typ)
	}
	if ip, ok := m.opt(opts, "switchIP", field+".opts"); ok && ip != "" {
		m.warn("switch %s: switchIP %s is ignored", name, ip)
	}
	for _, k := range []string{"sflow", "netflow"} {
		if v, ok := m.opt(opts, k, field+".opts"); ok && v == "1" {
			m.warn("switch %s: %s is ignored", name, k)
		}
	}
	if v, ok := get(opts, "externalInterfaces"); ok && nonEmpty(v) {
		m.warn("switch %s: externalInterfaces is not supported and ignored", name)
	}
	m.t.AddSwitch(name, params)
}

func (m *mnLoader) link(ps []pair, at *yaml.Node, field string) {
	var ends [2]string
	for i, k := range []string{"src", "dest"} {
		v, ok := get(ps, k)
		if !ok {
			m.ErrAt(at, field, "a link needs %s", k)
			return
		}
		s, ok := m.Str(v, field+"."+k)
		if !ok {
			return
		}
		if m.t.Node(s) == nil {
			if _, tried := m.nodeLine[s]; !tried {
				m.ErrAt(yamlpos.Deref(v), field+"."+k, "link to undefined node %q", s)
			}
			return
		}
		ends[i] = s
	}
	params := Params{}
	var origins paramOrigins // for hymn.New's checks (origins.go)
	if o, ok := get(ps, "opts"); ok && !yamlpos.IsNull(o) {
		if q, ok := m.Mapping(o, field+".opts"); ok {
			all := posOf(m.File, yamlpos.Deref(o), field+".opts")
			origins = paramOrigins{all: &all, byKey: map[string]paramPos{}}
			for _, p := range q {
				if v, ok := m.Value(p.Val, field+".opts."+p.Key); ok && v != "" {
					params[p.Key] = v
					origins.byKey[p.Key] = posOf(m.File, yamlpos.Deref(p.Val), field+".opts."+p.Key)
				}
			}
			for _, p := range q {
				if v, ok := params[p.Key]; ok {
					if err := CheckLinkParams(Params{p.Key: v}); err != nil {
						m.ErrAt(yamlpos.Deref(p.Val), field+".opts."+p.Key, "%v", err)
						return
					}
				}
			}
			if err := CheckLinkParams(params); err != nil {
				m.ErrAt(yamlpos.Deref(o), field+".opts", "%v", err)
				return
			}
		}
	}
	if ends[0] == ends[1] {
		m.ErrAt(at, field, "a node cannot be linked to itself (%s)", ends[0])
		return
	}
	before := len(m.t.errs)
	lk := m.t.AddLink(ends[0], ends[1], params)
	for _, err := range m.t.errs[before:] {
		m.ErrAt(at, field, "%v", err)
	}
	if lk != nil {
		lk.origins = origins
	}
}

// ipAdd is Mininet's ipAdd: host number i inside the base network, with the
// base's prefix length.
func ipAdd(i int, base netip.Prefix) (netip.Prefix, error) {
	hostBits := 32 - base.Bits()
	if i < 0 || uint64(i) > uint64(1)<<hostBits-1 {
		return netip.Prefix{}, fmt.Errorf("host number %d does not fit in %s", i, base)
	}
	ip := ipToUint(base.Masked().Addr()) + uint32(i)
	return netip.PrefixFrom(uintToIP(ip), base.Bits()), nil
}
