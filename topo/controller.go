package topo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// Controller is an OpenFlow controller of a topology, as Mininet's
// addController adds one: Kind is default, ref, ovsc or remote; IP and
// Port say where it listens (zero values: 127.0.0.1 and 6653, or for a
// controller hymn runs, the first free port from 6653).
type Controller struct {
	Name string
	Kind string
	IP   string
	Port int
}

// ControllerKinds are the kinds a topology may name (none adds nothing).
var ControllerKinds = []string{"default", "ref", "ovsc", "remote"}

// ParseController reads mn's --controller spec:
// default|ref|ovsc|remote|none[,ip=IP][,port=PORT] (remote also takes
// ip:port or ip positionally, as Mininet's RemoteController does). It
// returns nil for none.
func ParseController(name, spec string) (*Controller, error) {
	s, err := ParseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("--controller: %w", err)
	}
	kind := strings.ToLower(s.Name)
	if kind == "none" {
		return nil, nil
	}
	c := &Controller{Name: name, Kind: kind}
	args := s.Args
	if len(args) > 0 {
		c.IP, args = args[0], args[1:]
	}
	if len(args) > 0 {
		p, err := strconv.Atoi(args[0])
		if err != nil {
			return nil, fmt.Errorf("--controller %s: port %q is not a number", spec, args[0])
		}
		c.Port, args = p, args[1:]
	}
	if len(args) > 0 {
		return nil, fmt.Errorf("--controller %s: unexpected argument %q", spec, args[0])
	}
	for _, kv := range s.Kwargs {
		switch kv.Key {
		case "ip":
			c.IP = kv.Value
		case "port":
			p, err := strconv.Atoi(kv.Value)
			if err != nil {
				return nil, fmt.Errorf("--controller %s: port %q is not a number", spec, kv.Value)
			}
			c.Port = p
		case "name":
			c.Name = kv.Value
		default:
			return nil, fmt.Errorf("--controller %s: unknown option %q (it takes ip and port)", spec, kv.Key)
		}
	}
	return c, c.Validate()
}

// Validate checks a controller's fields, with Mininet's ip:port shorthand
// folded in.
func (c *Controller) Validate() error {
	if err := checkNodeName(c.Name); err != nil {
		return fmt.Errorf("controller: %w", err)
	}
	if c.Kind == "" {
		c.Kind = "default"
	}
	known := false
	for _, k := range ControllerKinds {
		known = known || c.Kind == k
	}
	if !known {
		return fmt.Errorf("controller %s: unknown kind %q: use default, ref, ovsc, remote or none", c.Name, c.Kind)
	}
	if host, port, ok := strings.Cut(c.IP, ":"); ok {
		p, err := strconv.Atoi(port)
		if err != nil {
			return fmt.Errorf("controller %s: %q is not ip:port", c.Name, c.IP)
		}
		c.IP, c.Port = host, p
	}
	if c.IP != "" && !validIPv4(c.IP) {
		return fmt.Errorf("controller %s: ip %q is not an IPv4 address", c.Name, c.IP)
	}
	if c.Kind != "remote" && c.IP != "" && c.IP != "127.0.0.1" {
		return fmt.Errorf("controller %s: a controller hymn runs listens on 127.0.0.1; use remote for one at %s", c.Name, c.IP)
	}
	if c.Port < 0 || c.Port > 65535 {
		return fmt.Errorf("controller %s: port %d is out of range", c.Name, c.Port)
	}
	return nil
}

func validIPv4(s string) bool {
	p, err := parseIP(s, 32)
	return err == nil && p.Bits() == 32
}

// AddController adds an OpenFlow controller and returns its name. The
// controller params are kind (default), ip and port.
func (t *Topo) AddController(name string, params ...Params) string {
	p := mergeParams(params)
	c := &Controller{Name: name, Kind: p["kind"], IP: p["ip"]}
	if v, ok := p["port"]; ok {
		port, err := strconv.Atoi(v)
		if err != nil {
			t.fail(fmt.Errorf("controller %s: port %q is not a number", name, v))
			return name
		}
		c.Port = port
	}
	t.AddControllerSpec(c)
	return name
}

// AddControllerSpec adds a controller as given.
func (t *Topo) AddControllerSpec(c *Controller) {
	if err := c.Validate(); err != nil {
		t.fail(err)
		return
	}
	if _, dup := t.byName[c.Name]; dup {
		t.fail(fmt.Errorf("%w: %q is a node and a controller", ErrDuplicateNode, c.Name))
		return
	}
	for _, o := range t.controllers {
		if o.Name == c.Name {
			t.fail(fmt.Errorf("%w: controller %q is added twice", ErrDuplicateNode, c.Name))
			return
		}
	}
	cc := *c
	t.controllers = append(t.controllers, &cc)
}

// Controllers returns the topology's controllers in the order they were
// added.
func (t *Topo) Controllers() []*Controller {
	out := make([]*Controller, len(t.controllers))
	for i, c := range t.controllers {
		cc := *c
		out[i] = &cc
	}
	return out
}

// addMiniEditController adds a MiniEdit controller entry: controllerType
// ref, ovsc or remote (MiniEdit's inband is taken as remote), remoteIP and
// remotePort. It takes effect with OpenFlow switches only, which the
// warning says, as MiniEdit files are run with hymn's Linux bridges too.
func (m *mnLoader) addMiniEditController(name string, opts []pair, at *yaml.Node, field string) {
	c := &Controller{Name: name, Kind: "ref"}
	if v, ok := m.opt(opts, "controllerType", field); ok && v != "" {
		switch v {
		case "ref", "ovsc", "remote":
			c.Kind = v
		case "inband":
			c.Kind = "remote"
		default:
			m.ErrAt(at, field+".controllerType", "unknown controller type %q (use ref, ovsc, remote or inband)", v)
			return
		}
	}
	if v, ok := m.opt(opts, "remoteIP", field); ok && v != "" && c.Kind == "remote" {
		c.IP = v
	}
	if v, ok := m.opt(opts, "remotePort", field); ok && v != "" {
		port, err := strconv.Atoi(v)
		if err != nil {
			m.ErrAt(at, field+".remotePort", "%q is not a port number", v)
			return
		}
		c.Port = port
	}
	before := len(m.t.errs)
	m.t.AddControllerSpec(c)
	for _, err := range m.t.errs[before:] {
		m.ErrAt(at, field, "%v", err)
	}
	m.warn("controller %s is ignored unless the switches are OpenFlow switches (--switch ovsk)", name)
}

// controllerKeys are the fields of a controller in a hymn file.
var controllerKeys = []string{"name", "kind", "ip", "port"}

// controllers reads a hymn file's controllers: a list of {name, kind, ip,
// port} or a mapping from name to {kind, ip, port}.
func (l *fileLoader) controllers(n *yaml.Node) {
	n = yamlpos.Deref(n)
	one := func(name string, nameAt *yaml.Node, body *yaml.Node, field string) {
		c := &Controller{Name: name}
		if body != nil && !yamlpos.IsNull(body) {
			ps, ok := l.Mapping(body, field)
			if !ok {
				return
			}
			l.CheckKeys(ps, field, controllerKeys)
			for _, p := range ps {
				f := field + "." + p.Key
				switch p.Key {
				case "name":
					c.Name, _ = l.Str(p.Val, f)
					nameAt = p.Val
				case "kind":
					c.Kind, _ = l.Str(p.Val, f)
				case "ip":
					c.IP, _ = l.Str(p.Val, f)
				case "port":
					c.Port, _ = l.Integer(p.Val, f)
				}
			}
		}
		if c.Name == "" {
			l.ErrAt(nameAt, field, "a controller needs a name")
			return
		}
		l.addChecked(nameAt, field, func() { l.t.AddControllerSpec(c) })
	}
	switch {
	case n != nil && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			field := fmt.Sprintf("controllers[%d]", i)
			if yamlpos.Deref(item) != nil && yamlpos.Deref(item).Kind == yaml.ScalarNode {
				name, _ := l.Str(item, field)
				one(name, item, nil, field)
				continue
			}
			one(fmt.Sprintf("c%d", i), item, item, field)
		}
	case n != nil && n.Kind == yaml.MappingNode:
		ps, ok := l.Mapping(n, "controllers")
		if !ok {
			return
		}
		for _, p := range ps {
			one(p.Key, p.KeyNode, p.Val, "controllers."+p.Key)
		}
	default:
		l.ErrAt(n, "controllers", "must be a list or a mapping of controllers, got %s", yamlpos.KindName(n))
	}
}

// customController is one entry of a Mininet custom file's controllers
// dict, as the custom file recorder describes it.
type customController struct {
	Kind string `json:"kind"`
	IP   string `json:"ip"`
	Port string `json:"port"`
}

// customControllers records a custom file's controllers dict: names that
// --controller may then use (mn --custom f.py --controller NAME).
func customControllers(t *Topo, in map[string]customController) error {
	for name, c := range in {
		spec := Controller{Name: "c0", Kind: c.Kind, IP: c.IP}
		if c.Port != "" {
			p, err := strconv.Atoi(c.Port)
			if err != nil {
				return fmt.Errorf("controllers[%s]: port %q is not a number", name, c.Port)
			}
			spec.Port = p
		}
		if err := spec.Validate(); err != nil {
			return fmt.Errorf("controllers[%s]: %w", name, err)
		}
		if t.controllerKinds == nil {
			t.controllerKinds = map[string]Controller{}
		}
		t.controllerKinds[name] = spec
	}
	return nil
}

// ParseControllerFor reads a --controller spec like ParseController, and
// also accepts the names a custom file's controllers dict defines, whose
// ip and port the spec's own options override.
func (t *Topo) ParseControllerFor(name, spec string) (*Controller, error) {
	s, err := ParseSpec(spec)
	if err == nil && t != nil {
		if base, ok := t.controllerKinds[s.Name]; ok {
			rest := base.Kind
			if base.IP != "" {
				rest += ",ip=" + base.IP
			}
			if base.Port != 0 {
				rest += ",port=" + strconv.Itoa(base.Port)
			}
			if _, tail, found := strings.Cut(spec, ","); found {
				rest += "," + tail
			}
			return ParseController(name, rest)
		}
	}
	return ParseController(name, spec)
}
