package yamlpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrBadFile matches every Error (errors.Is).
var ErrBadFile = errors.New("bad topology file")

// Bounds that keep hostile files cheap to reject.
const (
	maxErrors      = 20  // errors kept per document
	maxAliasDepth  = 64  // aliases followed in a chain
	jsonMaxNesting = 200 // JSON nesting the fallback tokenizer reads
	maxErrorLen    = 300 // bytes of a message or field path quoted
)

// Error is a mistake at a place in a file. Field is the path of
// the offending value, such as "nodes[2].kind" or "links[0].a.port".
type Error struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int
	Field  string
	Err    error
}

func (e *Error) Error() string {
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

func (e *Error) Unwrap() error { return e.Err }

// Is makes every Error match ErrBadFile.
func (e *Error) Is(target error) bool { return target == ErrBadFile }

// Doc is a parsed YAML document being walked and the errors found in it,
// each with the file, line, column and field path.
type Doc struct {
	File string
	Errs []error
	// mappings caches each mapping's expanded keys: aliases and merge keys
	// can reach one mapping many times, and expanding it again each time
	// would take time exponential in the nesting of merges.
	mappings map[*yaml.Node]mappingResult
}

type mappingResult struct {
	pairs []Pair
	ok    bool
}

// ErrAt records a mistake at n (nil: position unknown) in field.
func (d *Doc) ErrAt(n *yaml.Node, field, format string, args ...any) {
	if len(d.Errs) >= maxErrors {
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
	e := &Error{File: d.File, Field: field, Err: errors.New(msg)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.Errs = append(d.Errs, e)
}

// parse returns the document's root node. Valid JSON that the YAML parser
// refuses (YAML lacks a few of JSON's string escapes, such as "\/") is read
// by a JSON tokenizer instead, keeping line numbers.
func (d *Doc) Parse(data []byte) (root *yaml.Node, err error) {
	var n yaml.Node
	yerr := safeYAML(data, &n)
	if yerr != nil {
		if json.Valid(data) {
			jn, jerr := jsonToNode(data)
			if jerr == nil {
				return jn, nil
			}
		}
		return nil, &Error{File: d.File, Line: yamlErrLine(yerr), Err: errors.New(cleanYAMLErr(yerr))}
	}
	if n.Kind == 0 || len(n.Content) == 0 {
		return nil, &Error{File: d.File, Err: errors.New("the file is empty")}
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

// cleanYAMLErr drops the "yaml: line N:" prefix, which Error renders.
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
func Deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxAliasDepth; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

// Pair is one key of a mapping.
type Pair struct {
	Key     string
	KeyNode *yaml.Node
	Val     *yaml.Node
}

func KindName(n *yaml.Node) string {
	n = Deref(n)
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
func (d *Doc) Mapping(n *yaml.Node, field string) ([]Pair, bool) {
	n = Deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		d.ErrAt(n, field, "must be a mapping (key: value), got %s", KindName(n))
		return nil, false
	}
	if r, done := d.mappings[n]; done {
		if !r.ok {
			d.ErrAt(n, field, "this mapping merges itself")
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

func (d *Doc) expandMapping(n *yaml.Node, field string) []Pair {
	var own, merged []Pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := Deref(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.ErrAt(n.Content[i], field, "keys must be plain strings, got %s", KindName(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			for _, src := range mergeSources(v) {
				ps, ok := d.Mapping(src, field+".<<")
				if !ok {
					continue
				}
				merged = append(merged, ps...)
			}
			continue
		}
		if line, dup := seen[k.Value]; dup {
			d.ErrAt(k, JoinField(field, k.Value), "key %q is given twice (first at line %d)", k.Value, line)
			continue
		}
		seen[k.Value] = k.Line
		own = append(own, Pair{Key: k.Value, KeyNode: k, Val: v})
	}
	for _, p := range merged {
		if _, ok := seen[p.Key]; !ok {
			seen[p.Key] = p.KeyNode.Line
			own = append(own, p)
		}
	}
	return own
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	v = Deref(v)
	if v != nil && v.Kind == yaml.SequenceNode {
		return v.Content
	}
	return []*yaml.Node{v}
}

// checkKeys reports keys that are not in allowed.
func (d *Doc) CheckKeys(ps []Pair, field string, allowed []string) {
	for _, p := range ps {
		if !slices.Contains(allowed, p.Key) {
			d.ErrAt(p.KeyNode, JoinField(field, p.Key), "unknown key %q (allowed here: %s)", p.Key, strings.Join(allowed, ", "))
		}
	}
}

func JoinField(base, key string) string {
	if base == "" {
		return key
	}
	return base + "." + key
}

// str returns a scalar as text: strings and integers (a node may be called
// 1) are accepted, everything else is a type error.
func (d *Doc) Str(n *yaml.Node, field string) (string, bool) {
	n = Deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int") {
		d.ErrAt(n, field, "must be a string, got %s", KindName(n))
		return "", false
	}
	return n.Value, true
}

// value returns any scalar (string, number, boolean) as the text written:
// parameters are strings, as Mininet passes them.
func (d *Doc) Value(n *yaml.Node, field string) (string, bool) {
	n = Deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.ErrAt(n, field, "must be a string, number or boolean, got %s", KindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *Doc) Integer(n *yaml.Node, field string) (int, bool) {
	n = Deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.ErrAt(n, field, "must be an integer, got %s", KindName(n))
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 0, 32)
	if err != nil {
		d.ErrAt(n, field, "integer %s is out of range", n.Value)
		return 0, false
	}
	return int(v), true
}

func (d *Doc) Boolean(n *yaml.Node, field string) (bool, bool) {
	n = Deref(n)
	if n == nil || n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.ErrAt(n, field, "must be true or false, got %s", KindName(n))
		return false, false
	}
	v, err := strconv.ParseBool(strings.ToLower(n.Value))
	if err != nil {
		d.ErrAt(n, field, "must be true or false, got %q", n.Value)
		return false, false
	}
	return v, true
}

// params reads a free map of parameters; prefix is put before every key.
func (d *Doc) Params(n *yaml.Node, field, prefix string, into map[string]string) {
	if Deref(n) != nil && Deref(n).ShortTag() == "!!null" {
		return // "params:" with nothing after it
	}
	ps, ok := d.Mapping(n, field)
	if !ok {
		return
	}
	for _, p := range ps {
		if p.Key == "" || strings.ContainsAny(p.Key, " \t\n=,;") {
			d.ErrAt(p.KeyNode, JoinField(field, p.Key), "parameter names cannot be empty or contain spaces, '=', ',' or ';'")
			continue
		}
		if v, ok := d.Value(p.Val, JoinField(field, p.Key)); ok {
			into[prefix+p.Key] = v
		}
	}
}

func IsNull(n *yaml.Node) bool {
	n = Deref(n)
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
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
