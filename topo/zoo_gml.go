package topo

import (
	"html"
	"strings"
)

// GML (Graph Modelling Language) as the Topology Zoo writes it: key-value
// pairs separated by blanks, values that are integers, reals, "strings"
// (special characters as HTML entities) or [ lists ], lines starting with
// # are comments. The map is the top-level graph [ ... ] list, its node
// [ ... ] and edge [ ... ] entries.

// maxGMLDepth bounds list nesting (the Zoo's is three deep: graph, node,
// and an occasional attribute list).
const maxGMLDepth = 16

// gmlValue is one parsed value: a scalar (text, as written) or a list.
type gmlValue struct {
	text   string
	list   []gmlPair
	isList bool
	line   int
}

type gmlPair struct {
	key string
	val gmlValue
}

type gmlParser struct {
	g    *zooGraph
	data []byte
	pos  int
	line int
}

func parseGML(file string, data []byte, lim Limits) (*zooGraph, error) {
	p := &gmlParser{g: &zooGraph{file: file}, data: data, line: 1}
	top, err := p.list(0, false)
	if err != nil {
		return nil, err
	}
	var graph *gmlValue
	for i := range top {
		if top[i].key == "graph" {
			if graph != nil {
				return nil, p.g.errAt(top[i].val.line, "a second graph: hymn reads a map with one graph")
			}
			if !top[i].val.isList {
				return nil, p.g.errAt(top[i].val.line, "graph must be a [ list ]")
			}
			graph = &top[i].val
		}
	}
	if graph == nil {
		return nil, p.g.errAt(0, "no graph [ ... ]: not a GML map")
	}
	for _, kv := range graph.list {
		switch kv.key {
		case "node":
			if err := p.node(kv.val); err != nil {
				return nil, err
			}
		case "edge":
			if err := p.edge(kv.val); err != nil {
				return nil, err
			}
		default:
			continue
		}
		if err := lim.CheckSize(file, uint64(len(p.g.nodes)), uint64(len(p.g.edges))); err != nil {
			return nil, err
		}
	}
	return p.g, nil
}

// fields returns a node's or edge's scalar attributes by lower-case key.
func (p *gmlParser) fields(v gmlValue, what string) (map[string]gmlValue, error) {
	if !v.isList {
		return nil, p.g.errAt(v.line, "%s must be a [ list ]", what)
	}
	out := map[string]gmlValue{}
	for _, kv := range v.list {
		k := strings.ToLower(kv.key)
		if _, dup := out[k]; dup {
			return nil, p.g.errAt(kv.val.line, "%s has %s twice", what, clip(kv.key))
		}
		out[k] = kv.val
	}
	return out, nil
}

func (p *gmlParser) node(v gmlValue) error {
	f, err := p.fields(v, "node")
	if err != nil {
		return err
	}
	n := &zooNode{line: v.line}
	id, ok := f["id"]
	if !ok || id.isList {
		return p.g.errAt(v.line, "a node needs an id")
	}
	n.id = id.text
	if l, ok := f["label"]; ok && !l.isList {
		n.label = l.text
	}
	if x, ok := f["latitude"]; ok {
		n.lat, n.hasLat = x.text, true
	}
	if x, ok := f["longitude"]; ok {
		n.lon, n.hasLon = x.text, true
	}
	if h, ok := f["hyperedge"]; ok {
		n.hyper = truthy(h.text)
	}
	return p.g.addNode(n)
}

func (p *gmlParser) edge(v gmlValue) error {
	f, err := p.fields(v, "edge")
	if err != nil {
		return err
	}
	src, ok1 := f["source"]
	dst, ok2 := f["target"]
	if !ok1 || !ok2 || src.isList || dst.isList {
		return p.g.errAt(v.line, "an edge needs source and target")
	}
	p.g.edges = append(p.g.edges, zooEdge{src: src.text, dst: dst.text, line: v.line,
		speedRaw: f["linkspeedraw"].text, speed: f["linkspeed"].text, units: f["linkspeedunits"].text})
	return nil
}

func (p *gmlParser) skipBlanks() {
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch c {
		case '\n':
			p.line++
			p.pos++
		case ' ', '\t', '\r':
			p.pos++
		case '#':
			for p.pos < len(p.data) && p.data[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// list reads key-value pairs up to the closing ']' (or the end of the
// file at the top).
func (p *gmlParser) list(depth int, closed bool) ([]gmlPair, error) {
	if depth > maxGMLDepth {
		return nil, p.g.errAt(p.line, "lists nested deeper than %d", maxGMLDepth)
	}
	start := p.line
	var out []gmlPair
	for {
		p.skipBlanks()
		if p.pos >= len(p.data) {
			if closed {
				return nil, p.g.errAt(p.line, "the file ends inside the list opened at line %d (missing ])", start)
			}
			return out, nil
		}
		if p.data[p.pos] == ']' {
			if !closed {
				return nil, p.g.errAt(p.line, "] without a matching [")
			}
			p.pos++
			return out, nil
		}
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		p.skipBlanks()
		if p.pos >= len(p.data) {
			return nil, p.g.errAt(p.line, "%s has no value", clip(key))
		}
		v := gmlValue{line: p.line}
		switch p.data[p.pos] {
		case '[':
			p.pos++
			v.isList = true
			if v.list, err = p.list(depth+1, true); err != nil {
				return nil, err
			}
		case '"':
			if v.text, err = p.str(); err != nil {
				return nil, err
			}
		default:
			if v.text, err = p.number(key); err != nil {
				return nil, err
			}
		}
		out = append(out, gmlPair{key: key, val: v})
	}
}

func isKeyStart(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' }

func (p *gmlParser) key() (string, error) {
	start := p.pos
	if !isKeyStart(p.data[p.pos]) {
		return "", p.g.errAt(p.line, "expected a key, found %q", clip(string(p.data[p.pos:min(p.pos+16, len(p.data))])))
	}
	for p.pos < len(p.data) && (isKeyStart(p.data[p.pos]) || p.data[p.pos] >= '0' && p.data[p.pos] <= '9') {
		p.pos++
	}
	if p.pos-start > 256 {
		return "", p.g.errAt(p.line, "a key longer than 256 bytes")
	}
	return string(p.data[start:p.pos]), nil
}

// str reads a quoted string; GML has no escapes, the Zoo writes special
// characters as HTML entities (&amp;, &#246;).
func (p *gmlParser) str() (string, error) {
	line := p.line
	p.pos++ // the opening quote
	start := p.pos
	for p.pos < len(p.data) && p.data[p.pos] != '"' {
		if p.data[p.pos] == '\n' {
			p.line++
		}
		p.pos++
	}
	if p.pos >= len(p.data) {
		return "", p.g.errAt(line, "a string that never ends (missing \")")
	}
	s := string(p.data[start:p.pos])
	p.pos++
	if len(s) > maxDataText {
		return "", p.g.errAt(line, "a string longer than %d bytes", maxDataText)
	}
	return html.UnescapeString(s), nil
}

// number reads an integer or real value as written (its use checks it).
func (p *gmlParser) number(key string) (string, error) {
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ']' || c == '[' || c == '"' || c == '#' {
			break
		}
		p.pos++
	}
	s := string(p.data[start:p.pos])
	if s == "" || strings.IndexFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == '+' || r == 'e' || r == 'E')
	}) >= 0 {
		return "", p.g.errAt(p.line, "%s: %q is not a number, a \"string\" or a [ list ]", clip(key), clip(s))
	}
	return s, nil
}
