package topo

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Real maps: the Internet Topology Zoo publishes each network as GraphML
// and as GML, one node per point of presence (label, Latitude, Longitude)
// and one edge per link (LinkSpeed, LinkSpeedUnits, LinkSpeedRaw in bit/s).
// LoadZoo turns such a map into routers joined by links whose delay is
// the fibre distance between their ends, each router with one host.

// FibreSpeed is the speed of light in optical fibre, in km/s: c divided by
// the group index of standard single-mode fibre (ITU-T G.652) at 1550 nm,
// n ≈ 1.468, so about 204 218 km/s or 4.897 µs per km.
const FibreSpeed = 299792.458 / 1.468

// EarthRadius is the Earth's mean radius in km (IUGG), for great-circle
// distances.
const EarthRadius = 6371.0088

// GreatCircle returns the great-circle distance in km between two points
// given in degrees (haversine formula, on a sphere of EarthRadius).
func GreatCircle(lat1, lon1, lat2, lon2 float64) float64 {
	rad := math.Pi / 180
	dLat := (lat2 - lat1) * rad
	dLon := (lon2 - lon1) * rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * EarthRadius * math.Asin(math.Min(1, math.Sqrt(a)))
}

// FibreDelay is the one-way propagation delay over km of fibre.
func FibreDelay(km float64) time.Duration {
	return time.Duration(math.Round(km / FibreSpeed * float64(time.Second)))
}

// ZooOptions shape a map's topology.
type ZooOptions struct {
	// NoHosts leaves the routers without their hosts (hymn run
	// --hosts=false).
	NoHosts bool
	// Limits bound the file's size and the node and link counts.
	Limits Limits
}

// IsZooFile reports whether path names a map LoadZoo reads (.graphml or
// .gml).
func IsZooFile(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".graphml", ".gml":
		return true
	}
	return false
}

// LoadZoo reads a map in the Topology Zoo's GraphML (.graphml) or GML
// (.gml) format. Every mistake names the file and line; warnings (nodes
// without coordinates, merged or dropped edges) are in
// FileOptions.Warnings. The file's routing is static unless the caller
// says otherwise: without routes the routers would not reach each other.
func LoadZoo(path string, opts ZooOptions) (*Topo, FileOptions, error) {
	data, err := readLimited(path, opts.Limits.maxFileSize())
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, FileOptions{}, err
		}
		return nil, FileOptions{}, fmt.Errorf("reading map: %w", err)
	}
	return LoadZooData(path, data, opts)
}

// LoadZooData parses a map's contents; name (its extension chooses the
// format) is used in messages.
func LoadZooData(name string, data []byte, opts ZooOptions) (*Topo, FileOptions, error) {
	var (
		g   *zooGraph
		err error
	)
	switch strings.ToLower(filepath.Ext(name)) {
	case ".graphml":
		g, err = parseGraphML(name, data, opts.Limits)
	case ".gml":
		g, err = parseGML(name, data, opts.Limits)
	default:
		return nil, FileOptions{}, &FileError{File: name, Err: errors.New("a map is a .graphml or .gml file")}
	}
	if err != nil {
		return nil, FileOptions{}, err
	}
	return g.build(opts)
}

// zooGraph is a map as read, before it becomes a Topo.
type zooGraph struct {
	file  string
	nodes []*zooNode
	edges []zooEdge
	byID  map[string]*zooNode
}

type zooNode struct {
	id, label string
	// Latitude and Longitude as written; coordinates are checked when the
	// graph is built, so the message names the node's line.
	lat, lon       string
	hasLat, hasLon bool
	hyper          bool // a hyperedge: a shared medium joining its neighbours
	line           int
	latDeg, lonDeg float64
	hasCoords      bool
	name, hostName string
	degree         int
}

type zooEdge struct {
	src, dst string
	// speedRaw is LinkSpeedRaw (bit/s); speed and units are LinkSpeed
	// and LinkSpeedUnits, used when there is no raw value.
	speedRaw, speed, units string
	line                   int
}

func (g *zooGraph) errAt(line int, format string, a ...any) error {
	return &FileError{File: g.file, Line: line, Err: fmt.Errorf(format, a...)}
}

// addNode records a node, refusing a repeated id.
func (g *zooGraph) addNode(n *zooNode) error {
	if g.byID == nil {
		g.byID = map[string]*zooNode{}
	}
	if n.id == "" {
		return g.errAt(n.line, "a node needs an id")
	}
	if prev, dup := g.byID[n.id]; dup {
		return g.errAt(n.line, "node id %q is already used at line %d", clip(n.id), prev.line)
	}
	g.byID[n.id] = n
	g.nodes = append(g.nodes, n)
	return nil
}

// build checks the graph and makes the topology: routers (and a switch
// per hyperedge), one host per router on port 0, and a link per edge with
// its fibre delay and link speed.
func (g *zooGraph) build(opts ZooOptions) (*Topo, FileOptions, error) {
	fo := FileOptions{Routing: "static"}
	var errs []error
	var noCoords []string
	for _, n := range g.nodes {
		if err := n.coords(g); err != nil {
			errs = append(errs, err)
		}
		if !n.hasCoords && !n.hyper {
			noCoords = append(noCoords, n.id)
		}
	}
	type pair struct{ a, b string }
	merged := map[pair]int{} // index into edges
	var edges []zooEdge
	selfLoops, dups := 0, 0
	for _, e := range g.edges {
		for _, id := range []string{e.src, e.dst} {
			if g.byID[id] == nil {
				errs = append(errs, g.errAt(e.line, "edge to undefined node %q", clip(id)))
			}
		}
		if e.src == e.dst {
			selfLoops++
			continue
		}
		if _, err := e.bitsPerSecond(); err != nil {
			errs = append(errs, g.errAt(e.line, "%v", err))
		}
		k := pair{min(e.src, e.dst), max(e.src, e.dst)}
		if i, dup := merged[k]; dup {
			dups++
			edges[i] = edges[i].mergeSpeed(e)
			continue
		}
		merged[k] = len(edges)
		edges = append(edges, e)
	}
	if len(errs) > 0 {
		return nil, FileOptions{}, errors.Join(errs...)
	}
	if err := opts.Limits.CheckSize(g.file, uint64(len(g.nodes))*2, uint64(len(edges)+len(g.nodes))); err != nil {
		return nil, FileOptions{}, err
	}
	if len(g.nodes) == 0 {
		return nil, FileOptions{}, g.errAt(0, "the map has no nodes")
	}
	if len(noCoords) > 0 {
		fo.Warnings = append(fo.Warnings, fmt.Sprintf("%s: %d nodes have no coordinates (ids %s): their links get no delay",
			g.file, len(noCoords), clipList(noCoords)))
	}
	if selfLoops > 0 {
		fo.Warnings = append(fo.Warnings, fmt.Sprintf("%s: %d self-loops dropped", g.file, selfLoops))
	}
	if dups > 0 {
		fo.Warnings = append(fo.Warnings, fmt.Sprintf("%s: %d duplicate edges merged into the first (their speeds added)", g.file, dups))
	}
	for _, e := range edges {
		g.byID[e.src].degree++
		g.byID[e.dst].degree++
	}
	g.name(opts.NoHosts)

	t := New()
	for _, n := range g.nodes {
		params := Params{}
		if n.label != "" {
			params["label"] = clip(strings.ToValidUTF8(n.label, ""))
		}
		if n.hasCoords {
			params["latitude"] = strconv.FormatFloat(n.latDeg, 'f', -1, 64)
			params["longitude"] = strconv.FormatFloat(n.lonDeg, 'f', -1, 64)
		}
		kind := KindRouter
		if n.hyper {
			kind = KindSwitch
		}
		t.AddNode(n.name, kind, params)
		t.Node(n.name).Origin = fmt.Sprintf("%s:%d", g.file, n.line)
	}
	if !opts.NoHosts {
		for _, n := range g.nodes {
			if n.hyper {
				continue
			}
			t.AddHost(n.hostName)
			t.Node(n.hostName).Origin = fmt.Sprintf("%s:%d", g.file, n.line)
			// The host's link first: it is the router's port 0, its
			// default interface, on the router's LAN.
			t.AddLink(n.name, n.hostName).Origin = fmt.Sprintf("%s:%d", g.file, n.line)
		}
	}
	for _, e := range edges {
		a, b := g.byID[e.src], g.byID[e.dst]
		params := Params{}
		if a.hasCoords && b.hasCoords {
			d := FibreDelay(GreatCircle(a.latDeg, a.lonDeg, b.latDeg, b.lonDeg))
			params["delay"] = strconv.FormatInt(d.Round(time.Microsecond).Microseconds(), 10) + "us"
		}
		if bps, _ := e.bitsPerSecond(); bps > 0 {
			params["bw"] = strconv.FormatFloat(bps/1e6, 'g', -1, 64)
		}
		t.AddLink(a.name, b.name, params).Origin = fmt.Sprintf("%s:%d", g.file, e.line)
	}
	if err := t.Err(); err != nil {
		return nil, FileOptions{}, &FileError{File: g.file, Err: err}
	}
	return t, fo, nil
}

// coords checks a node's Latitude and Longitude.
func (n *zooNode) coords(g *zooGraph) error {
	if !n.hasLat && !n.hasLon {
		return nil
	}
	if n.hasLat != n.hasLon {
		return g.errAt(n.line, "node %q has only one of Latitude and Longitude", clip(n.id))
	}
	lat, err1 := strconv.ParseFloat(strings.TrimSpace(n.lat), 64)
	lon, err2 := strconv.ParseFloat(strings.TrimSpace(n.lon), 64)
	switch {
	case err1 != nil || math.IsNaN(lat) || lat < -90 || lat > 90:
		return g.errAt(n.line, "node %q: Latitude %q is not a number of degrees from -90 to 90", clip(n.id), clip(n.lat))
	case err2 != nil || math.IsNaN(lon) || lon < -180 || lon > 180:
		return g.errAt(n.line, "node %q: Longitude %q is not a number of degrees from -180 to 180", clip(n.id), clip(n.lon))
	}
	n.latDeg, n.lonDeg, n.hasCoords = lat, lon, true
	return nil
}

// speedUnits are LinkSpeedUnits' prefixes.
var speedUnits = map[string]float64{"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}

// bitsPerSecond returns the edge's speed, 0 when the map does not give
// one: LinkSpeedRaw, else LinkSpeed in LinkSpeedUnits.
func (e zooEdge) bitsPerSecond() (float64, error) {
	if s := strings.TrimSpace(e.speedRaw); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("LinkSpeedRaw %q is not a number of bit/s", clip(s))
		}
		return min(v, 1e15), nil
	}
	s := strings.TrimSpace(e.speed)
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("LinkSpeed %q is not a number", clip(s))
	}
	mult, ok := speedUnits[strings.ToUpper(strings.TrimSpace(e.units))]
	if !ok {
		return 0, fmt.Errorf("LinkSpeedUnits %q is not one of K, M, G, T", clip(e.units))
	}
	return min(v*mult, 1e15), nil
}

// mergeSpeed folds a parallel edge into e: the speeds add up when both
// are known; an unknown speed leaves the link's unknown.
func (e zooEdge) mergeSpeed(o zooEdge) zooEdge {
	a, errA := e.bitsPerSecond()
	b, errB := o.bitsPerSecond()
	if errA != nil || errB != nil || a == 0 || b == 0 {
		e.speedRaw, e.speed, e.units = "", "", ""
		return e
	}
	e.speedRaw = strconv.FormatFloat(a+b, 'g', -1, 64)
	return e
}

// name gives every node a safe, unique name that leaves room for its
// interface names (15 bytes: name-ethN): routers from their labels
// (letters and digits), hosts "h" and their router's name, hyperedge
// switches s1, s2...
func (g *zooGraph) name(noHosts bool) {
	maxDegree := 0
	for _, n := range g.nodes {
		maxDegree = max(maxDegree, n.degree)
	}
	// A router's ports are 0..degree (its host on 0): "-eth" and the
	// digits of the highest port follow the name.
	highest := maxDegree
	if noHosts {
		highest = max(maxDegree-1, 0)
	}
	limit := MaxIntfName - len("-eth") - len(strconv.Itoa(highest))
	if !noHosts {
		limit = min(limit, MaxIntfName-len("-eth0")-len("h"))
	}
	limit = max(limit, 2)
	used := map[string]bool{}
	unique := func(base string, limit int) string {
		if len(base) > limit {
			base = base[:limit]
		}
		if !used[base] {
			used[base] = true
			return base
		}
		for k := 2; ; k++ {
			suffix := strconv.Itoa(k)
			stem := base
			if len(stem)+len(suffix) > limit {
				stem = stem[:max(limit-len(suffix), 1)]
			}
			if name := stem + suffix; !used[name] {
				used[name] = true
				return name
			}
		}
	}
	switches := 0
	for _, n := range g.nodes {
		if n.hyper {
			switches++
			// A switch's dpid comes from the digits in its name.
			n.name = unique("s"+strconv.Itoa(switches), MaxIntfName-len("-eth")-len(strconv.Itoa(n.degree)))
			continue
		}
		n.name = unique(safeName(n.label, n.id), limit)
	}
	if noHosts {
		return
	}
	for _, n := range g.nodes {
		if !n.hyper {
			n.hostName = unique("h"+n.name, MaxIntfName-len("-eth0"))
		}
	}
}

// safeName keeps the ASCII letters and digits of a label ("New York" is
// NewYork), starting with a letter; a label with none gives "n" and the
// node's id.
func safeName(label, id string) string {
	keep := func(s string) string {
		var b strings.Builder
		for _, r := range s {
			if r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
				b.WriteRune(r)
			}
		}
		return b.String()
	}
	s := keep(label)
	if s == "" {
		s = "n" + keep(id)
	}
	if s == "n" {
		s = "node"
	}
	if c := s[0]; c >= '0' && c <= '9' {
		s = "n" + s
	}
	return s
}

// clipList names at most a few items of a list in a message.
func clipList(items []string) string {
	const show = 5
	out := make([]string, 0, show)
	for _, s := range items[:min(len(items), show)] {
		out = append(out, clip(s))
	}
	if len(items) > show {
		out = append(out, fmt.Sprintf("and %d more", len(items)-show))
	}
	return strings.Join(out, ", ")
}
