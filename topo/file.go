package topo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FileOptions are the settings a topology file may carry besides the
// topology itself. The command line's flags take precedence over them.
type FileOptions struct {
	IPBase   netip.Prefix // options.ipbase; invalid when the file does not set it
	AutoMAC  bool         // options.mac: true
	Warnings []string     // things the file asked for that hymn ignores (MiniEdit files)
}

// Address returns the address options the file asks for.
func (o FileOptions) Address() AddressOptions {
	return AddressOptions{IPBase: o.IPBase, AutoMAC: o.AutoMAC}
}

// ErrBadFile matches (with errors.Is) every error that points at a place in
// a topology file, so a caller can tell bad input from I/O failures.
var ErrBadFile = errors.New("bad topology file")

// FileError is a mistake at a place in a topology file. Field is the path of
// the offending value, such as "nodes[2].kind" or "links[0].a.port".
type FileError struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int
	Field  string
	Err    error
}

func (e *FileError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *FileError) Unwrap() error { return e.Err }

// Is makes every FileError match ErrBadFile.
func (e *FileError) Is(target error) bool { return target == ErrBadFile }

// The keys the hymn file format accepts, by place. schema/topology.schema.json
// lists the same keys; a test keeps the two in step.
var (
	topLevelKeys   = []string{"name", "description", "options", "defaults", "nodes", "links", "controllers"}
	optionKeys     = []string{"ipbase", "mac"}
	defaultKeys    = []string{"node", "host", "switch", "router", "link"}
	nodeKeys       = []string{"name", "kind", "backend", "ip", "mac", "routes", "params"}
	linkKeys       = []string{"endpoints", "a", "b", "kind", "params", "a>b", "b>a", "schedule"}
	endpointKeys   = []string{"node", "port", "intf", "ip", "mac"}
	nodeKinds      = []string{string(KindHost), string(KindSwitch), string(KindRouter)}
	nodeBackends   = []string{"netns", "vm"}
	directionKeys  = []string{"a>b", "b>a"}
	maxFileErrors  = 20
	maxAliasDepth  = 64
	jsonMaxNesting = 200
	maxErrorLen    = 300
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
	return loadWith(path, data, lim)
}

// Load parses a topology file's contents; name is used in error messages.
func Load(name string, data []byte) (*Topo, FileOptions, error) {
	return loadWith(name, data, Limits{})
}

func loadWith(name string, data []byte, lim Limits) (*Topo, FileOptions, error) {
	d := &doc{file: name, lim: lim}
	root, err := d.parse(data)
	if err != nil {
		return nil, FileOptions{}, err
	}
	l := &fileLoader{doc: d, t: New(), nodeLine: map[string]int{}, badNodes: map[string]bool{}}
	opts := l.load(root)
	if len(d.errs) > 0 {
		return nil, FileOptions{}, errors.Join(d.errs...)
	}
	if err := l.t.Err(); err != nil {
		// Every Topo mistake is caught above with its position; this is a
		// safety net so a topology with errors is never returned.
		return nil, FileOptions{}, &FileError{File: name, Err: err}
	}
	return l.t, opts, nil
}

// doc holds a parsed YAML document and the errors found in it.
type doc struct {
	file string
	lim  Limits // node and link counts are checked before they are read
	errs []error
	// mappings caches each mapping's expanded keys: aliases and merge keys
	// can reach one mapping many times, and expanding it again each time
	// would take time exponential in the nesting of merges.
	mappings map[*yaml.Node]mappingResult
}

type mappingResult struct {
	pairs []pair
	ok    bool
}

func (d *doc) errAt(n *yaml.Node, field, format string, args ...any) {
	if len(d.errs) >= maxFileErrors {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if len(msg) > maxErrorLen {
		// A huge value quoted in the message must not make it unreadable.
		msg = strings.ToValidUTF8(msg[:maxErrorLen], "") + "..."
	}
	if len(field) > maxErrorLen {
		field = strings.ToValidUTF8(field[:maxErrorLen], "") + "..."
	}
	e := &FileError{File: d.file, Field: field, Err: errors.New(msg)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// parse returns the document's root node. Valid JSON that the YAML parser
// refuses (YAML lacks a few of JSON's string escapes, such as "\/") is read
// by a JSON tokenizer instead, keeping line numbers.
func (d *doc) parse(data []byte) (root *yaml.Node, err error) {
	var n yaml.Node
	yerr := safeYAML(data, &n)
	if yerr != nil {
		if json.Valid(data) {
			jn, jerr := jsonToNode(data)
			if jerr == nil {
				return jn, nil
			}
		}
		return nil, &FileError{File: d.file, Line: yamlErrLine(yerr), Err: errors.New(cleanYAMLErr(yerr))}
	}
	if n.Kind == 0 || len(n.Content) == 0 {
		return nil, &FileError{File: d.file, Err: errors.New("the file is empty")}
	}
	return n.Content[0], nil
}

// safeYAML runs the third-party parser on untrusted input; a panic inside
// it must become an error, never crash the caller.
func safeYAML(data []byte, n *yaml.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	// A second document would be silently ignored; say so instead.
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		line := 0
		if len(extra.Content) > 0 {
			line = extra.Content[0].Line
		}
		return fmt.Errorf("yaml: line %d: a topology file holds one document; remove the second one", line)
	}
	return nil
}

func yamlErrLine(err error) int {
	msg := err.Error()
	i := strings.Index(msg, "line ")
	if i < 0 {
		return 0
	}
	rest := msg[i+5:]
	j := 0
	for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
		j++
	}
	n, _ := strconv.Atoi(rest[:j])
	return n
}

// cleanYAMLErr drops the "yaml: line N:" prefix, which FileError renders.
func cleanYAMLErr(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if strings.HasPrefix(msg, "line ") {
		if _, rest, ok := strings.Cut(msg, ": "); ok {
			return rest
		}
	}
	return msg
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxAliasDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// pair is one key of a mapping.
type pair struct {
	key     string
	keyNode *yaml.Node
	val     *yaml.Node
}

func kindName(n *yaml.Node) string {
	n = deref(n)
	if n == nil {
		return "nothing"
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return "null"
		case "!!bool":
			return "a boolean"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a number"
		case "!!str":
			return "a string"
		}
		return "a " + strings.TrimPrefix(n.ShortTag(), "!!")
	}
	return "something else"
}

// mapping returns a mapping's keys in order, expanding YAML merge keys
// ("<<: *defaults"; keys written in the mapping win) and rejecting duplicate
// keys, which YAML parsers disagree about.
func (d *doc) mapping(n *yaml.Node, field string) ([]pair, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		d.errAt(n, field, "must be a mapping (key: value), got %s", kindName(n))
		return nil, false
	}
	if r, done := d.mappings[n]; done {
		if !r.ok {
			d.errAt(n, field, "this mapping merges itself")
		}
		return r.pairs, r.ok
	}
	if d.mappings == nil {
		d.mappings = map[*yaml.Node]mappingResult{}
	}
	// A mapping that merges itself (through aliases) ends here.
	d.mappings[n] = mappingResult{}
	ps := d.expandMapping(n, field)
	d.mappings[n] = mappingResult{ps, true}
	return ps, true
}

func (d *doc) expandMapping(n *yaml.Node, field string) []pair {
	var own, merged []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.errAt(n.Content[i], field, "keys must be plain strings, got %s", kindName(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			for _, src := range mergeSources(v) {
				ps, ok := d.mapping(src, field+".<<")
				if !ok {
					continue
				}
				merged = append(merged, ps...)
			}
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.errAt(k, joinField(field, k.Value), "key %q is given twice (first at line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		own = append(own, pair{key: k.Value, keyNode: k, val: v})
	}
	for _, p := range merged {
		if _, ok := seen[p.key]; !ok {
			seen[p.key] = p.keyNode.Line
			own = append(own, p)
		}
	}
	return own
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	v = deref(v)
	if v != nil && v.Kind == yaml.SequenceNode {
		return v.Content
	}
	return []*yaml.Node{v}
}

// checkKeys reports keys that are not in allowed.
func (d *doc) checkKeys(ps []pair, field string, allowed []string) {
	for _, p := range ps {
		if !slices.Contains(allowed, p.key) {
			d.errAt(p.keyNode, joinField(field, p.key), "unknown key %q (allowed here: %s)", p.key, strings.Join(allowed, ", "))
		}
	}
}

func joinField(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

// str returns a scalar as text: strings and integers (a node may be called
// 1) are accepted, everything else is a type error.
func (d *doc) str(n *yaml.Node, field string) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int") {
		d.errAt(n, field, "must be a string, got %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

// value returns any scalar (string, number, boolean) as the text written:
// parameters are strings, as Mininet passes them.
func (d *doc) value(n *yaml.Node, field string) (string, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.errAt(n, field, "must be a string, number or boolean, got %s", kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *doc) integer(n *yaml.Node, field string) (int, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.errAt(n, field, "must be an integer, got %s", kindName(n))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 0, 32)
	if err != nil {
		d.errAt(n, field, "integer %s is out of range", n.Value)
		return 0, false
	}
	return int(v), true
}

func (d *doc) boolean(n *yaml.Node, field string) (bool, bool) {
	n = deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.errAt(n, field, "must be true or false, got %s", kindName(n))
		return false, false
	}
	v, err := strconv.ParseBool(strings.ToLower(n.Value))
	if err != nil {
		d.errAt(n, field, "must be true or false, got %q", n.Value)
		return false, false
	}
	return v, true
}

// params reads a free map of parameters; prefix is put before every key.
func (d *doc) params(n *yaml.Node, field, prefix string, into Params) {
	if deref(n) != nil && deref(n).ShortTag() == "!!null" {
		return // "params:" with nothing after it
	}
	ps, ok := d.mapping(n, field)
	if !ok {
		return
	}
	for _, p := range ps {
		if p.key == "" || strings.ContainsAny(p.key, " \t\n=,;") {
			d.errAt(p.keyNode, joinField(field, p.key), "parameter names cannot be empty or contain spaces, '=', ',' or ';'")
			continue
		}
		if v, ok := d.value(p.val, joinField(field, p.key)); ok {
			into[prefix+p.key] = v
		}
	}
}

func isNull(n *yaml.Node) bool {
	n = deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// fileLoader turns the document into a Topo.
type fileLoader struct {
	*doc
	t        *Topo
	defaults map[string]Params // node, host, switch, router, link
	nodeLine map[string]int    // where each node is defined
	badNodes map[string]bool   // named but refused: links to them are not reported again
}

func (l *fileLoader) load(root *yaml.Node) FileOptions {
	var opts FileOptions
	top, ok := l.mapping(root, "")
	if !ok {
		return opts
	}
	l.checkKeys(top, "", topLevelKeys)
	byKey := map[string]pair{}
	for _, p := range top {
		byKey[p.key] = p
	}
	for _, k := range []string{"name", "description"} {
		if p, ok := byKey[k]; ok {
			l.str(p.val, k)
		}
	}
	if p, ok := byKey["options"]; ok && !isNull(p.val) {
		opts = l.options(p.val)
	}
	l.defaults = map[string]Params{}
	if p, ok := byKey["defaults"]; ok && !isNull(p.val) {
		if ps, ok := l.mapping(p.val, "defaults"); ok {
			l.checkKeys(ps, "defaults", defaultKeys)
			for _, q := range ps {
				pp := Params{}
				l.params(q.val, "defaults."+q.key, "", pp)
				l.defaults[q.key] = pp
			}
		}
	}
	p, ok := byKey["nodes"]
	if !ok || isNull(p.val) {
		l.errAt(root, "nodes", "the file defines no nodes (add a nodes: list)")
		return opts
	}
	l.nodes(p.val)
	if p, ok := byKey["links"]; ok && !isNull(p.val) {
		l.links(p.val)
	}
	if p, ok := byKey["controllers"]; ok && !isNull(p.val) {
		l.controllers(p.val) // controller.go
	}
	return opts
}

func (l *fileLoader) options(n *yaml.Node) FileOptions {
	var opts FileOptions
	ps, ok := l.mapping(n, "options")
	if !ok {
		return opts
	}
	l.checkKeys(ps, "options", optionKeys)
	for _, p := range ps {
		field := "options." + p.key
		switch p.key {
		case "ipbase":
			s, ok := l.str(p.val, field)
			if !ok {
				continue
			}
			pfx, err := netip.ParsePrefix(s)
			if err != nil || !pfx.Addr().Is4() {
				l.errAt(p.val, field, "%q is not an IPv4 network like 10.0.0.0/8", s)
				continue
			}
			opts.IPBase = pfx
		case "mac":
			opts.AutoMAC, _ = l.boolean(p.val, field)
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
	n = deref(n)
	if n != nil && !l.checkCount(n, "nodes", len(n.Content), 0) {
		return
	}
	var entries []nodeEntry
	switch {
	case n != nil && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			field := fmt.Sprintf("nodes[%d]", i)
			item = deref(item)
			if item != nil && item.Kind == yaml.ScalarNode && !isNull(item) {
				// The short form "- h1" is a host with the defaults.
				if name, ok := l.str(item, field); ok {
					entries = append(entries, nodeEntry{field: field, name: name, at: item})
				}
				continue
			}
			ps, ok := l.mapping(item, field)
			if !ok {
				continue
			}
			e := nodeEntry{field: field, body: ps, at: item}
			named, nameOK := false, false
			for _, p := range ps {
				if p.key == "name" {
					named = true
					e.name, nameOK = l.str(p.val, field+".name")
					e.at = deref(p.val)
				}
			}
			if !named {
				l.errAt(item, field, "a node needs a name")
			}
			if !nameOK {
				continue // already reported
			}
			entries = append(entries, e)
		}
	case n != nil && n.Kind == yaml.MappingNode:
		ps, _ := l.mapping(n, "nodes")
		for _, p := range ps {
			field := "nodes." + p.key
			e := nodeEntry{field: field, name: p.key, at: p.keyNode}
			if !isNull(p.val) {
				if body, ok := l.mapping(p.val, field); ok {
					e.body = body
					for _, q := range body {
						if q.key == "name" {
							if s, ok := l.str(q.val, field+".name"); ok && s != p.key {
								l.errAt(q.val, field+".name", "name %q differs from the key %q it is listed under", s, p.key)
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
		l.errAt(n, "nodes", "must be a list of nodes or a mapping from name to node, got %s", kindName(n))
		return
	}
	for _, e := range entries {
		l.node(e)
	}
}

func (l *fileLoader) node(e nodeEntry) {
	if err := checkNodeName(e.name); err != nil {
		l.errAt(e.at, e.field+".name", "%v", err)
		l.badNodes[e.name] = true
		return
	}
	if line, dup := l.nodeLine[e.name]; dup {
		l.errAt(e.at, e.field+".name", "%v: %q is already defined at line %d", ErrDuplicateNode, e.name, line)
		return
	}
	kind := KindHost
	fields := Params{}
	own := Params{}
	var routes []string
	if e.body != nil {
		l.checkKeys(e.body, e.field, nodeKeys)
		for _, p := range e.body {
			field := e.field + "." + p.key
			switch p.key {
			case "kind":
				if s, ok := l.str(p.val, field); ok {
					if !slices.Contains(nodeKinds, s) {
						l.errAt(p.val, field, "%q is not a node kind (use %s)", s, strings.Join(nodeKinds, ", "))
					} else {
						kind = Kind(s)
					}
				}
			case "backend":
				if s, ok := l.str(p.val, field); ok {
					if !slices.Contains(nodeBackends, s) {
						l.errAt(p.val, field, "%q is not a backend (use %s)", s, strings.Join(nodeBackends, ", "))
					} else {
						fields["backend"] = s
					}
				}
			case "ip":
				if s, ok := l.str(p.val, field); ok {
					if !strings.EqualFold(s, "none") {
						if _, err := parseIP(s, DefaultIPBase.Bits()); err != nil {
							l.errAt(p.val, field, "%v", err)
							continue
						}
					}
					fields["ip"] = s
				}
			case "mac":
				if s, ok := l.macValue(p.val, field); ok {
					fields["mac"] = s
				}
			case "routes":
				routes = l.routes(p.val, field)
			case "params":
				l.params(p.val, field, "", own)
			}
		}
	}
	if kind == KindSwitch {
		for _, k := range []string{"ip", "mac"} {
			if _, ok := fields[k]; ok {
				l.errAt(e.at, e.field+"."+k, "a switch has no address of its own; put addresses on hosts, routers or link ends")
			}
		}
		if routes != nil {
			l.errAt(e.at, e.field+".routes", "a switch does not route; put routes on hosts or routers")
		}
	}
	if routes != nil {
		fields["routes"] = strings.Join(routes, ";")
	}
	for k := range fields {
		if _, dup := own[k]; dup {
			l.errAt(e.at, e.field+".params."+k, "%s is given both as a field and in params; keep one", k)
		}
	}
	params := Params{}
	for _, src := range []Params{l.defaults["node"], l.defaults[string(kind)], own, fields} {
		for k, v := range src {
			params[k] = v
		}
	}
	if err := checkNodeParams(&Node{Name: e.name, Kind: kind, Params: params}); err != nil {
		l.errAt(e.at, e.field, "%v", err)
	}
	l.nodeLine[e.name] = e.at.Line
	l.addChecked(e.at, e.field, func() { l.t.AddNode(e.name, kind, params) })
}

// addChecked runs a Topo method and gives any mistake it records the
// position of the entry that caused it.
func (l *fileLoader) addChecked(at *yaml.Node, field string, add func()) {
	before := len(l.t.errs)
	add()
	for _, err := range l.t.errs[before:] {
		l.errAt(at, field, "%v", err)
	}
}

func (d *doc) macValue(n *yaml.Node, field string) (string, bool) {
	s, ok := d.str(n, field)
	if !ok {
		return "", false
	}
	if _, err := parseUnicastMAC(s); err != nil {
		d.errAt(n, field, "%v", err)
		return "", false
	}
	return s, true
}

// routes reads a list of static routes in ip-route syntax:
// "10.0.2.0/24 via 10.0.1.2", "default via 10.0.1.1", "10.0.3.0/24 dev h1-eth1".
func (l *fileLoader) routes(n *yaml.Node, field string) []string {
	n = deref(n)
	var items []*yaml.Node
	switch {
	case n != nil && n.Kind == yaml.SequenceNode:
		items = n.Content
	case n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		items = []*yaml.Node{n}
	default:
		l.errAt(n, field, "must be a list of routes like \"10.0.2.0/24 via 10.0.1.2\", got %s", kindName(n))
		return nil
	}
	out := []string{}
	for i, item := range items {
		f := fmt.Sprintf("%s[%d]", field, i)
		s, ok := l.str(item, f)
		if !ok {
			continue
		}
		r, err := checkRoute(s)
		if err != nil {
			l.errAt(deref(item), f, "%v", err)
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
	e := endpoint{port: -1, at: deref(n), field: field}
	n = deref(n)
	if n != nil && n.Kind == yaml.ScalarNode {
		e.node, e.ok = l.str(n, field)
	} else {
		ps, ok := l.mapping(n, field)
		if !ok {
			return e
		}
		l.checkKeys(ps, field, endpointKeys)
		e.ok = true
		hasNode := false
		for _, p := range ps {
			f := field + "." + p.key
			switch p.key {
			case "node":
				hasNode = true
				s, ok := l.str(p.val, f)
				e.node, e.at = s, deref(p.val)
				e.ok = e.ok && ok
			case "port":
				v, ok := l.integer(p.val, f)
				if ok && v < 0 {
					l.errAt(p.val, f, "port %d is negative", v)
					ok = false
				}
				e.port, e.ok = v, e.ok && ok
			case "intf":
				s, ok := l.str(p.val, f)
				if ok {
					if err := CheckIntfName(s); err != nil {
						l.errAt(p.val, f, "%v", err)
						ok = false
					}
				}
				e.intf, e.ok = s, e.ok && ok
			case "ip":
				s, ok := l.str(p.val, f)
				if ok {
					if _, err := parseIP(s, DefaultIPBase.Bits()); err != nil {
						l.errAt(p.val, f, "%v", err)
						ok = false
					}
				}
				e.ip, e.hasIP, e.ok = s, true, e.ok && ok
			case "mac":
				s, ok := l.macValue(p.val, f)
				e.mac, e.hasMAC, e.ok = s, true, e.ok && ok
			}
		}
		if !hasNode {
			l.errAt(n, field, "a link end needs node:")
			e.ok = false
		}
	}
	if e.ok && l.t.Node(e.node) == nil {
		if !l.badNodes[e.node] {
			l.errAt(e.at, field, "link to undefined node %q", e.node)
		}
		e.ok = false
	}
	return e
}

func (l *fileLoader) links(n *yaml.Node) {
	n = deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		l.errAt(n, "links", "must be a list of links, got %s", kindName(n))
		return
	}
	if !l.checkCount(n, "links", 0, len(n.Content)) {
		return
	}
	for i, item := range n.Content {
		l.link(deref(item), fmt.Sprintf("links[%d]", i))
	}
}

func (l *fileLoader) link(n *yaml.Node, field string) {
	ps, ok := l.mapping(n, field)
	if !ok {
		return
	}
	l.checkKeys(ps, field, linkKeys)
	byKey := map[string]pair{}
	for _, p := range ps {
		byKey[p.key] = p
	}
	var ends [2]endpoint
	ep, hasEP := byKey["endpoints"]
	pa, hasA := byKey["a"]
	pb, hasB := byKey["b"]
	switch {
	case hasEP && (hasA || hasB):
		l.errAt(n, field, "give either endpoints: or a: and b:, not both")
		return
	case hasEP:
		list := deref(ep.val)
		if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) != 2 {
			if list != nil && list.Kind == yaml.SequenceNode {
				l.errAt(list, field+".endpoints", "a link has exactly two ends, got %d", len(list.Content))
			} else {
				l.errAt(list, field+".endpoints", "must be a list of two nodes like [h1, s1], got %s", kindName(list))
			}
			return
		}
		ends[0] = l.endpoint(list.Content[0], field+".endpoints[0]")
		ends[1] = l.endpoint(list.Content[1], field+".endpoints[1]")
	case hasA && hasB:
		ends[0] = l.endpoint(pa.val, field+".a")
		ends[1] = l.endpoint(pb.val, field+".b")
	default:
		l.errAt(n, field, "a link needs endpoints: [n1, n2] or a: and b:")
		return
	}
	params := Params{}
	for k, v := range l.defaults["link"] {
		params[k] = v
	}
	own := Params{}
	if p, ok := byKey["params"]; ok {
		l.params(p.val, field+".params", "", own)
	}
	for _, dir := range directionKeys {
		if p, ok := byKey[dir]; ok {
			l.params(p.val, field+"."+dir, dir+".", own)
		}
	}
	if p, ok := byKey["kind"]; ok {
		// The link backend (veth or sriov), as --links chooses it for all.
		k := deref(p.val)
		switch {
		case k == nil || k.Kind != yaml.ScalarNode:
			l.errAt(p.val, field+".kind", "must be veth or sriov")
		case k.Value != "veth" && k.Value != "sriov":
			l.errAt(k, field+".kind", "%q is not a link kind (use veth or sriov)", k.Value)
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
				l.errAt(e.at, field+".params."+key, "%s is also given on the link end; keep one", key)
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
		l.errAt(ends[1].at, field, "a node cannot be linked to itself (%s)", ends[0].node)
		return
	}
	var lk *Link
	before := len(l.errs)
	l.addChecked(n, field, func() {
		lk = l.t.AddLinkPorts(ends[0].node, ends[1].node, ends[0].port, ends[1].port, params)
	})
	if len(l.errs) > before {
		return
	}
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
			l.errAt(e.at, e.field, "interface name %s is %d bytes; Linux allows at most %d (shorten the node name or set intf:)",
				name, len(name), MaxIntfName)
		}
	}
}

// checkCount checks a list's length against the size limits before its
// entries are read (a mapping's content counts each entry twice, which
// only makes the check stricter).
func (d *doc) checkCount(n *yaml.Node, field string, nodes, links int) bool {
	if err := d.lim.CheckSize("", uint64(nodes), uint64(links)); err != nil {
		d.errAt(n, field, "%v", err)
		return false
	}
	return true
}

// checkLinkParams validates a link's parameters (emulation values such as
// delay included) where they are written, so a bad value is a usage error
// with its line, not a failure while links are being built.
func (l *fileLoader) checkLinkParams(params Params, byKey map[string]pair, field string, at *yaml.Node) {
	err := CheckLinkParams(params)
	if err == nil {
		return
	}
	// Point at the first value that is wrong on its own, if there is one.
	for _, sect := range append([]string{"params"}, directionKeys...) {
		p, ok := byKey[sect]
		if !ok || isNull(p.val) {
			continue
		}
		ps, _ := l.mapping(p.val, field+"."+sect)
		for _, q := range ps {
			key := q.key
			if sect != "params" {
				key = sect + "." + q.key
			}
			if one := CheckLinkParams(Params{key: params[key]}); one != nil {
				l.errAt(deref(q.val), field+"."+sect+"."+q.key, "%v", one)
				return
			}
		}
	}
	l.errAt(at, field+".params", "%v", err)
}

// jsonToNode builds a YAML node tree from JSON, with line and column
// numbers, for JSON the YAML parser cannot read.
func jsonToNode(data []byte) (*yaml.Node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lines := lineStarts(data)
	pos := func(off int64) (int, int) {
		// Skip separators to land on the token itself.
		for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
			off++
		}
		i, _ := slices.BinarySearch(lines, int(off)+1)
		return i, int(off) - lines[i-1] + 1
	}
	var read func(depth int) (*yaml.Node, error)
	read = func(depth int) (*yaml.Node, error) {
		if depth > jsonMaxNesting {
			return nil, errors.New("JSON nested too deeply")
		}
		line, col := pos(dec.InputOffset())
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		n := &yaml.Node{Line: line, Column: col}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' {
				n.Kind, n.Tag = yaml.MappingNode, "!!map"
				for dec.More() {
					kl, kc := pos(dec.InputOffset())
					kt, err := dec.Token()
					if err != nil {
						return nil, err
					}
					ks, _ := kt.(string)
					val, err := read(depth + 1)
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ks, Line: kl, Column: kc}, val)
				}
			} else {
				n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
				for dec.More() {
					val, err := read(depth + 1)
					if err != nil {
						return nil, err
					}
					n.Content = append(n.Content, val)
				}
			}
			if _, err := dec.Token(); err != nil { // the closing delimiter
				return nil, err
			}
		case string:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!str", v
		case json.Number:
			n.Kind, n.Value = yaml.ScalarNode, v.String()
			n.Tag = "!!int"
			if strings.ContainsAny(n.Value, ".eE") {
				n.Tag = "!!float"
			}
		case bool:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!bool", strconv.FormatBool(v)
		case nil:
			n.Kind, n.Tag, n.Value = yaml.ScalarNode, "!!null", "null"
		}
		return n, nil
	}
	return read(0)
}

// lineStarts returns the offset of the first byte of each line.
func lineStarts(data []byte) []int {
	out := []int{0}
	for i, c := range data {
		if c == '\n' {
			out = append(out, i+1)
		}
	}
	return out
}

// LoadAny loads a topology file by its extension: .py is a Mininet custom
// file (spec names the topology in its topos dictionary and gives its
// arguments), .mn a MiniEdit file, anything else hymn's YAML/JSON format
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
	}
	if spec.Name != "" {
		return nil, FileOptions{}, fmt.Errorf("%w: %s is a topology file, which holds one topology; --topo %s does not apply", ErrBadSpec, path, spec)
	}
	return LoadFile(path)
}
