package topo

import (
	"fmt"
	"slices"
	"strings"
)

// DOT renders a resolved topology as a Graphviz graph: hosts are boxes,
// switches blue ellipses, routers orange hexagons; each link is an edge
// whose ends name the interfaces (with their address when it is not the
// node's own) and whose label lists the link's parameters, per-direction
// settings on their own line. The output is deterministic (plan order), so
// it can be diffed and kept in golden files.
func DOT(p *Plan) string {
	var b strings.Builder
	b.WriteString("graph \"hymn\" {\n")
	b.WriteString("\tgraph [fontname=\"Helvetica\", overlap=false, splines=true];\n")
	b.WriteString("\tnode [fontname=\"Helvetica\", fontsize=11];\n")
	b.WriteString("\tedge [fontname=\"Helvetica\", fontsize=9, labelfontsize=8, labelfontcolor=\"#555555\"];\n")
	for _, n := range p.Nodes {
		lines := []string{n.Name}
		if n.Kind != KindSwitch && n.IP.IsValid() {
			lines = append(lines, n.IP.String())
		}
		if be := n.Params["backend"]; be != "" && be != "netns" {
			lines = append(lines, "("+be+")")
		}
		attrs := nodeStyle(n.Kind)
		fmt.Fprintf(&b, "\t%s [%s, label=%s];\n", dotQuote(n.Name), attrs, dotLabel(lines))
	}
	for _, l := range p.Links {
		attrs := []string{
			"taillabel=" + dotLabel(intfLines(p, l.Intf1)),
			"headlabel=" + dotLabel(intfLines(p, l.Intf2)),
		}
		if lines := linkLines(l); len(lines) > 0 {
			attrs = append(attrs, "label="+dotLabel(lines))
		}
		fmt.Fprintf(&b, "\t%s -- %s [%s];\n", dotQuote(l.Intf1.Node), dotQuote(l.Intf2.Node), strings.Join(attrs, ", "))
	}
	b.WriteString("}\n")
	return b.String()
}

// TopoDOT resolves t with the given addressing and renders it with DOT.
func TopoDOT(t *Topo, opts AddressOptions) (string, error) {
	p, err := Resolve(t, opts)
	if err != nil {
		return "", err
	}
	return DOT(p), nil
}

func nodeStyle(k Kind) string {
	switch k {
	case KindSwitch:
		return `shape=ellipse, style=filled, fillcolor="#dbe9f6"`
	case KindRouter:
		return `shape=hexagon, style=filled, fillcolor="#fde4c8"`
	}
	return `shape=box, style="rounded"`
}

func intfLines(p *Plan, i *Intf) []string {
	lines := []string{i.Name}
	if n := p.Node(i.Node); i.IP.IsValid() && (n == nil || i.IP != n.IP) {
		lines = append(lines, i.IP.String())
	}
	return lines
}

// linkLines lists a link's parameters: shared ones on the first line, then
// one line per direction ("h1→s1: delay=10ms").
func linkLines(l *PlannedLink) []string {
	var shared []string
	dirs := map[string][]string{}
	for _, k := range sortedKeys(l.Params) {
		v := l.Params[k]
		switch {
		case k == "intfName1" || k == "intfName2" || k == "ip1" || k == "ip2" || k == "mac1" || k == "mac2":
			// Shown at the link's ends, or not worth the space.
		case strings.HasPrefix(k, "a>b.") || strings.HasPrefix(k, "b>a."):
			dirs[k[:3]] = append(dirs[k[:3]], k[4:]+"="+v)
		default:
			shared = append(shared, k+"="+v)
		}
	}
	var lines []string
	if len(shared) > 0 {
		lines = append(lines, strings.Join(shared, " "))
	}
	for _, d := range []struct{ key, from, to string }{
		{"a>b", l.Intf1.Node, l.Intf2.Node}, {"b>a", l.Intf2.Node, l.Intf1.Node},
	} {
		if vs := dirs[d.key]; len(vs) > 0 {
			lines = append(lines, d.from+"→"+d.to+": "+strings.Join(vs, " "))
		}
	}
	return lines
}

func sortedKeys(p Params) []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// dotQuote makes a DOT string literal.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}

// dotLabel joins lines with DOT's centred line break.
func dotLabel(lines []string) string {
	for i, l := range lines {
		q := dotQuote(l)
		lines[i] = q[1 : len(q)-1]
	}
	return `"` + strings.Join(lines, `\n`) + `"`
}
