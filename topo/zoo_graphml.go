package topo

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strconv"
	"strings"
)

// maxXMLDepth bounds element nesting in a GraphML map (the Zoo's go four
// deep: graphml, graph, node, data).
const maxXMLDepth = 32

// maxDataText bounds one <data> value.
const maxDataText = 64 << 10

// graphmlKey is a <key> declaration: which attribute a <data key=...>
// carries.
type graphmlKey struct {
	name string // attr.name, lower case
	dflt string // <default>, applied where an element has no data for it
	hasD bool
}

// graphmlParser reads a GraphML document with encoding/xml's tokenizer,
// keeping the line of each element for messages.
type graphmlParser struct {
	d    *xml.Decoder
	g    *zooGraph
	lim  Limits
	keys map[string]*graphmlKey // by id

	graphs int // <graph> elements seen (only the first is the map)
	hypers int // <hyperedge> elements seen
}

func parseGraphML(file string, data []byte, lim Limits) (*zooGraph, error) {
	p := &graphmlParser{d: xml.NewDecoder(bytes.NewReader(data)), g: &zooGraph{file: file}, lim: lim,
		keys: map[string]*graphmlKey{}}
	// No DTD, no external entities: the standard entities and character
	// references only (encoding/xml never fetches anything).
	p.d.Strict = true
	if err := p.document(); err != nil {
		return nil, err
	}
	return p.g, nil
}

func (p *graphmlParser) line() int {
	l, _ := p.d.InputPos()
	return l
}

func (p *graphmlParser) errf(format string, a ...any) error {
	return p.g.errAt(p.line(), format, a...)
}

// token returns the next token, turning XML syntax errors into FileErrors
// with their line.
func (p *graphmlParser) token() (xml.Token, error) {
	tok, err := p.d.Token()
	if err == io.EOF {
		return nil, err
	}
	if err != nil {
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return nil, p.g.errAt(se.Line, "not well-formed GraphML: %s", se.Msg)
		}
		return nil, p.errf("reading GraphML: %v", err)
	}
	return tok, nil
}

func (p *graphmlParser) document() error {
	sawRoot := false
	for {
		tok, err := p.token()
		if err == io.EOF {
			if !sawRoot {
				return p.g.errAt(0, "no <graphml> element: not a GraphML file")
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local != "graphml" || sawRoot {
				return p.errf("<%s>: a GraphML file has one <graphml> element at its top", clip(t.Name.Local))
			}
			sawRoot = true
			if err := p.graphml(); err != nil {
				return err
			}
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return p.errf("text outside <graphml>")
			}
		case xml.Directive:
			return p.errf("GraphML maps have no <!DOCTYPE> or other directives")
		}
	}
}

// graphml reads the root's children: keys and the graph.
func (p *graphmlParser) graphml() error {
	for {
		tok, err := p.token()
		if err != nil {
			return p.eof(err, "graphml")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "key":
				if err := p.key(t); err != nil {
					return err
				}
			case "graph":
				p.graphs++
				if p.graphs > 1 {
					return p.errf("a second <graph>: hymn reads a map with one graph")
				}
				if err := p.graph(); err != nil {
					return err
				}
			default:
				if err := p.skip(1); err != nil {
					return err
				}
			}
		case xml.EndElement:
			if p.graphs == 0 {
				return p.errf("the GraphML file has no <graph>")
			}
			return nil
		}
	}
}

// eof turns an early end of the document into a message.
func (p *graphmlParser) eof(err error, in string) error {
	if err == io.EOF {
		return p.errf("the file ends inside <%s>", in)
	}
	return err
}

func attr(t xml.StartElement, name string) (string, bool) {
	for _, a := range t.Attr {
		if a.Name.Local == name {
			return a.Value, true
		}
	}
	return "", false
}

func (p *graphmlParser) key(t xml.StartElement) error {
	id, _ := attr(t, "id")
	name, _ := attr(t, "attr.name")
	k := &graphmlKey{name: strings.ToLower(name)}
	if id == "" {
		return p.errf("<key> without an id")
	}
	if len(p.keys) >= 1024 {
		return p.errf("more than 1024 <key> declarations")
	}
	p.keys[id] = k
	for {
		tok, err := p.token()
		if err != nil {
			return p.eof(err, "key")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "default" {
				s, err := p.text("default")
				if err != nil {
					return err
				}
				k.dflt, k.hasD = s, true
				continue
			}
			if err := p.skip(2); err != nil {
				return err
			}
		case xml.EndElement:
			return nil
		}
	}
}

// text reads an element's text up to its end tag.
func (p *graphmlParser) text(in string) (string, error) {
	var b strings.Builder
	for {
		tok, err := p.token()
		if err != nil {
			return "", p.eof(err, in)
		}
		switch t := tok.(type) {
		case xml.CharData:
			if b.Len()+len(t) > maxDataText {
				return "", p.errf("<%s> holds more than %d bytes", in, maxDataText)
			}
			b.Write(t)
		case xml.StartElement:
			return "", p.errf("<%s> inside <%s>: a value is text", clip(t.Name.Local), in)
		case xml.EndElement:
			return b.String(), nil
		}
	}
}

// skip passes over an element the map does not need, bounded in depth.
func (p *graphmlParser) skip(depth int) error {
	for level := 1; level > 0; {
		tok, err := p.token()
		if err != nil {
			return p.eof(err, "graphml")
		}
		switch tok.(type) {
		case xml.StartElement:
			level++
			if depth+level > maxXMLDepth {
				return p.errf("elements nested deeper than %d", maxXMLDepth)
			}
		case xml.EndElement:
			level--
		}
	}
	return nil
}

// data reads the <data> children of an element into attribute values by
// (lower-case) name.
type dataSet map[string]string

func (p *graphmlParser) data(t xml.StartElement, into dataSet) error {
	key, _ := attr(t, "key")
	s, err := p.text("data")
	if err != nil {
		return err
	}
	k, ok := p.keys[key]
	if !ok {
		return p.errf("<data key=%q> names no <key>", clip(key))
	}
	into[k.name] = s
	return nil
}

func (p *graphmlParser) graph() error {
	for {
		tok, err := p.token()
		if err != nil {
			return p.eof(err, "graph")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "node":
				if err := p.node(t); err != nil {
					return err
				}
			case "edge":
				if err := p.edge(t); err != nil {
					return err
				}
			case "hyperedge":
				if err := p.hyperedge(); err != nil {
					return err
				}
			case "data":
				if err := p.data(t, dataSet{}); err != nil {
					return err
				}
			default:
				if err := p.skip(2); err != nil {
					return err
				}
			}
		case xml.EndElement:
			return nil
		}
	}
}

// children reads an element's <data> children; a nested graph is refused.
func (p *graphmlParser) children(in string) (dataSet, error) {
	ds := dataSet{}
	for {
		tok, err := p.token()
		if err != nil {
			return nil, p.eof(err, in)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "data":
				if err := p.data(t, ds); err != nil {
					return nil, err
				}
			case "graph":
				return nil, p.errf("a <graph> inside a <%s>: nested graphs are not maps", in)
			default:
				if err := p.skip(3); err != nil {
					return nil, err
				}
			}
		case xml.EndElement:
			return ds, nil
		}
	}
}

// withDefaults fills the attributes an element lacks from the keys'
// defaults.
func (p *graphmlParser) withDefaults(ds dataSet) dataSet {
	for _, k := range p.keys {
		if _, ok := ds[k.name]; !ok && k.hasD {
			ds[k.name] = k.dflt
		}
	}
	return ds
}

func (p *graphmlParser) checkCount() error {
	if err := p.lim.CheckSize(p.g.file, uint64(len(p.g.nodes)), uint64(len(p.g.edges))); err != nil {
		return err
	}
	return nil
}

func (p *graphmlParser) node(t xml.StartElement) error {
	line := p.line()
	id, _ := attr(t, "id")
	ds, err := p.children("node")
	if err != nil {
		return err
	}
	ds = p.withDefaults(ds)
	n := &zooNode{id: id, line: line, label: ds["label"]}
	n.lat, n.hasLat = ds["latitude"]
	n.lon, n.hasLon = ds["longitude"]
	n.hyper = truthy(ds["hyperedge"])
	if err := p.g.addNode(n); err != nil {
		return err
	}
	return p.checkCount()
}

func (p *graphmlParser) edge(t xml.StartElement) error {
	line := p.line()
	src, ok1 := attr(t, "source")
	dst, ok2 := attr(t, "target")
	if !ok1 || !ok2 {
		return p.g.errAt(line, "an <edge> needs source and target")
	}
	ds, err := p.children("edge")
	if err != nil {
		return err
	}
	ds = p.withDefaults(ds)
	p.g.edges = append(p.g.edges, zooEdge{src: src, dst: dst, line: line,
		speedRaw: ds["linkspeedraw"], speed: ds["linkspeed"], units: ds["linkspeedunits"]})
	return p.checkCount()
}

// hyperedge turns a GraphML <hyperedge> into a node of its own joined to
// each endpoint, as the Zoo draws a shared medium.
func (p *graphmlParser) hyperedge() error {
	line := p.line()
	p.hypers++
	n := &zooNode{id: "hyperedge" + strconv.Itoa(p.hypers), line: line, hyper: true}
	var ends []string
	for done := false; !done; {
		tok, err := p.token()
		if err != nil {
			return p.eof(err, "hyperedge")
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Local == "endpoint" {
				node, ok := attr(t, "node")
				if !ok {
					return p.errf("an <endpoint> needs node")
				}
				ends = append(ends, node)
			}
			if err := p.skip(3); err != nil {
				return err
			}
		case xml.EndElement:
			done = true
		}
	}
	if len(ends) < 2 {
		return p.g.errAt(line, "a <hyperedge> joins at least two nodes, got %d", len(ends))
	}
	if err := p.g.addNode(n); err != nil {
		return err
	}
	for _, e := range ends {
		p.g.edges = append(p.g.edges, zooEdge{src: e, dst: n.id, line: line})
	}
	return p.checkCount()
}

// truthy reads a flag as the Zoo writes it (1) or as text (true, yes).
func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "1.0":
		return true
	}
	return false
}
