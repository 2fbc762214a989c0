package topo

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// Placement hints for running a topology across several workers (package
// partition). They are node parameters, so they travel with the node
// through every format and the Go API.
const (
	// ParamPlacement pins a node to a worker, numbered from 0: the
	// file's per-node placement: key, or params: {placement: 1}.
	ParamPlacement = "placement"
	// ParamPlacementGroup names a group of nodes kept on one worker: the
	// file's top-level placement: list sets it to "placement[i]".
	ParamPlacementGroup = "placementGroup"
)

// MaxWorkers bounds a worker number in a placement hint; it keeps absurd
// values (placement: 99999999999) from reaching the partitioner.
const MaxWorkers = 4096

// ParsePlacement reads a worker number written in a placement hint.
func ParsePlacement(v string) (int, error) {
	w, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || w < 0 || w >= MaxWorkers {
		return 0, fmt.Errorf("placement %q is not a worker number (0 to %d)", v, MaxWorkers-1)
	}
	return w, nil
}

var placementKeys = []string{"nodes", "worker"}

// placement reads the top-level placement: list, groups of nodes kept on
// one worker, optionally pinned to it:
//
//	placement:
//	  - nodes: [h1, s1, s2]
//	    worker: 1
//
// Each member gets placementGroup "placement[i]" and, with worker:, the
// placement parameter; a node in two groups, an unknown node or a worker
// that contradicts the node's own placement is an error at its position.
func (l *fileLoader) placement(n *yaml.Node) {
	n = yamlpos.Deref(n)
	if n == nil || n.Kind != yaml.SequenceNode {
		l.ErrAt(n, "placement", "must be a list of groups like {nodes: [h1, s1], worker: 0}, got %s", yamlpos.KindName(n))
		return
	}
	inGroup := map[string]string{}
	for i, item := range n.Content {
		field := fmt.Sprintf("placement[%d]", i)
		ps, ok := l.Mapping(item, field)
		if !ok {
			continue
		}
		l.CheckKeys(ps, field, placementKeys)
		worker := ""
		var members []*yaml.Node
		hasNodes := false
		for _, p := range ps {
			switch p.Key {
			case "worker":
				v, ok := l.Integer(p.Val, field+".worker")
				if !ok {
					continue
				}
				w, err := ParsePlacement(strconv.Itoa(v))
				if err != nil {
					l.ErrAt(p.Val, field+".worker", "%v", err)
					continue
				}
				worker = strconv.Itoa(w)
			case "nodes":
				hasNodes = true
				list := yamlpos.Deref(p.Val)
				if list == nil || list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
					l.ErrAt(list, field+".nodes", "must be a non-empty list of node names, got %s", yamlpos.KindName(list))
					continue
				}
				members = list.Content
			}
		}
		if !hasNodes {
			l.ErrAt(item, field, "a placement group needs nodes: [...]")
			continue
		}
		group := field
		for j, m := range members {
			f := fmt.Sprintf("%s.nodes[%d]", field, j)
			name, ok := l.Str(m, f)
			if !ok {
				continue
			}
			node := l.t.Node(name)
			if node == nil {
				if !l.badNodes[name] {
					l.ErrAt(yamlpos.Deref(m), f, "%v: placement of undefined node %q", ErrUnknownNode, name)
				}
				continue
			}
			if prev, dup := inGroup[name]; dup {
				l.ErrAt(yamlpos.Deref(m), f, "node %s is already in %s; a node belongs to one placement group", name, prev)
				continue
			}
			inGroup[name] = group
			node.Params[ParamPlacementGroup] = group
			if worker == "" {
				continue
			}
			if own, ok := node.Params[ParamPlacement]; ok {
				if w, err := ParsePlacement(own); err == nil && strconv.Itoa(w) != worker {
					l.ErrAt(yamlpos.Deref(m), f, "node %s has placement %s of its own, but its group says worker %s", name, own, worker)
				}
				continue
			}
			node.Params[ParamPlacement] = worker
		}
	}
}
