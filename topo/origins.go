package topo

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/hymn-net/hymn/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// paramPos is where a file wrote a link's parameter, or its parameters as
// a whole: the file, the node of the value and the field path.
type paramPos struct {
	file, field  string
	line, column int
}

func posOf(file string, n *yaml.Node, field string) paramPos {
	p := paramPos{file: file, field: field}
	if n != nil {
		p.line, p.column = n.Line, n.Column
	}
	return p
}

func (p paramPos) err(err error) error {
	return &yamlpos.Error{File: p.file, Line: p.line, Column: p.column, Field: p.field, Err: err}
}

// paramOrigins records where a file wrote a link's parameters, so that
// checks that only package hymn can make (the emulator's parser, schedule
// and trace files) still name the file, line and field of a bad value.
// topo validates its own parameters at load; those run in hymn.New.
type paramOrigins struct {
	all   *paramPos           // the link's params as a whole
	byKey map[string]paramPos // a key's own value
}

// ParamsError returns err, which a check above topo found in the link's
// parameters, with where a file wrote them: at key's value when key is
// one the file wrote on its own (the caller's err is then about that key
// alone), else at the link's parameters, else (a topology built in Go)
// naming the link. A positioned error matches ErrBadFile.
func (l *PlannedLink) ParamsError(key string, err error) error {
	if p, ok := l.origins.byKey[key]; ok && key != "" {
		return p.err(err)
	}
	if l.origins.all != nil {
		return l.origins.all.err(err)
	}
	return fmt.Errorf("link %s: %w", l, err)
}

// FileKeys returns the parameter keys a file wrote for the link itself, in
// the order it wrote them (defaults and topo's own keys are not among them).
func (l *PlannedLink) FileKeys() []string {
	keys := make([]string, 0, len(l.origins.byKey))
	for k := range l.origins.byKey {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		pa, pb := l.origins.byKey[a], l.origins.byKey[b]
		return cmp.Or(cmp.Compare(pa.line, pb.line), cmp.Compare(pa.column, pb.column), cmp.Compare(a, b))
	})
	return keys
}

// ParamsError returns err, which a check above topo (a VM's parameters, in
// hymn.New) found in the node's parameters, naming the node and, when a
// file defined it, the file, line and field of its entry.
func (n *Node) ParamsError(err error) error {
	err = fmt.Errorf("node %s: %w", n.Name, err)
	if n.at != nil {
		return n.at.err(err)
	}
	return err
}
