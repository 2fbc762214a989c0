package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hymn-net/hymn"
)

// Parts is a network split over workers (hymn cluster run), as its view
// reads it. Each worker runs its part with hymn.Network and serves this
// package's API for it (Handler) through the worker protocol; the
// coordinator's view merges the parts, draws the cut links (VXLAN
// tunnels between workers) with their tunnels' counters, and sends each
// action to the worker that holds the link or node it names.
type Parts interface {
	// Run names the split network (the page's title).
	Run() string
	// Workers is the number of workers, numbered from 0.
	Workers() int
	// WorkerOf says which worker runs a node of the whole topology.
	WorkerOf(node string) (int, bool)
	// Call runs one request of this package's API (Handler) in worker
	// w's process: GET or POST, a target such as /api/stats, a JSON body
	// for POST.
	Call(ctx context.Context, w int, method, target string, body []byte) (Reply, error)
	// CutLinks are the links whose ends are on two workers, in plan
	// order.
	CutLinks() []CutLink
	// CutCounters reads every cut link's tunnel counters, by
	// CutLink.Index; a link missing from the map could not be read.
	CutCounters(ctx context.Context) (map[int]CutCounters, error)
}

// Reply is a worker's answer to Call.
type Reply struct {
	Status int
	// Header holds the answer's Content-Type and, for a file,
	// Content-Disposition.
	Header map[string]string
	Body   []byte
}

// CutLink is a link between nodes on two workers: a VXLAN tunnel.
type CutLink struct {
	Index            int // in the whole topology's links
	Node1, Node2     string
	Intf1, Intf2     string
	Worker1, Worker2 int
	VNI              int
	// Emulated: each direction has an emulator on its sending side.
	Emulated bool
}

// CutCounters are one cut link's tunnel counters, ab being node1 to
// node2.
type CutCounters struct{ AB, BA Counters }

// callTimeout bounds a request the view forwards to a worker (a measure
// is bounded by its duration on top).
const callTimeout = 10 * time.Second

// clusterView serves the API for a split network: the stream over the
// merged parts, and the actions forwarded to the worker concerned.
type clusterView struct {
	*stream
	parts Parts
	mux   *http.ServeMux
	cuts  []CutLink

	// pmu guards the parts' topologies and the ids derived from them.
	pmu     sync.Mutex
	topos   []*Topology // per worker; nil: not read yet
	changes []int       // per worker: its Changes when its topology was read
	offsets []int       // per worker: its first link's id in the merged view
	cutBase int         // the first cut link's id
	gen     int         // the merged topology's changes since it was first served
	served  bool        // a client has read the merged topology
	// prevCuts are the cut links' last counters, for rates.
	prevCuts map[int]LinkSample
	prevTime time.Time

	caps []capRef // guarded by the stream's mu; a capture's id is its index
}

// capRef is a capture started from the view: its worker and the worker's
// own id for it.
type capRef struct{ worker, local int }

// ServeCluster starts the live view of a network split over workers on
// opts.Listen, as Serve does for one network in this process.
func ServeCluster(parts Parts, opts Options) (*Server, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	v := newClusterView(parts, opts)
	s, err := listen(opts, v, parts.Run())
	if err != nil {
		v.closeStream()
		return nil, err
	}
	s.closeAPI = func() { v.closeStream() }
	return s, nil
}

func newClusterView(parts Parts, opts Options) *clusterView {
	n := parts.Workers()
	v := &clusterView{parts: parts, cuts: parts.CutLinks(), topos: make([]*Topology, n), changes: make([]int, n), offsets: make([]int, n)}
	v.stream = newStream(opts, v.topology, func() feed { return v })
	v.mux = http.NewServeMux()
	v.routes(v.mux)
	v.mux.HandleFunc("GET /api/node", v.node)
	v.mux.HandleFunc("GET /api/histogram", v.histogram)
	v.mux.HandleFunc("GET /api/captures", v.captures)
	v.mux.HandleFunc("GET /api/capture/file", v.captureFile)
	v.mux.HandleFunc("POST /api/link/state", v.forwardAction("node1", "node2"))
	v.mux.HandleFunc("POST /api/link/emu", v.forwardAction("node1", "node2"))
	v.mux.HandleFunc("POST /api/capture/start", v.forwardAction("node1", "node2"))
	v.mux.HandleFunc("POST /api/measure", v.forwardAction("from", "to"))
	v.mux.HandleFunc("POST /api/capture/stop", v.captureStop)
	return v
}

func (v *clusterView) ServeHTTP(w http.ResponseWriter, r *http.Request) { v.mux.ServeHTTP(w, r) }

// callJSON runs a GET on worker w and decodes a 200 answer into out.
func (v *clusterView) callJSON(ctx context.Context, w int, target string, out any) error {
	rep, err := v.parts.Call(ctx, w, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	if rep.Status != http.StatusOK {
		return fmt.Errorf("worker %d: %s: %d %s", w, target, rep.Status, clipText(rep.Body))
	}
	return json.Unmarshal(rep.Body, out)
}

func clipText(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return string(b)
}

// topology is the merged topology, reading the parts not read yet.
func (v *clusterView) topology() Topology {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	v.pmu.Lock()
	defer v.pmu.Unlock()
	v.readTopologiesLocked(ctx)
	v.served = true
	return v.mergeLocked()
}

func (v *clusterView) readTopologiesLocked(ctx context.Context) {
	for w, t := range v.topos {
		if t != nil {
			continue
		}
		var nt Topology
		if err := v.callJSON(ctx, w, "/api/topology", &nt); err != nil {
			continue // drawn without this part until it answers
		}
		v.topos[w] = &nt
		if v.served {
			v.gen++ // pages drew it without this part, or with its old links
		}
	}
}

// mergeLocked joins the parts' topologies: each worker's links get ids
// after the previous worker's, the cut links come last. Controllers are
// per worker; a second worker's controller of the same name is shown as
// NAME@wN.
func (v *clusterView) mergeLocked() Topology {
	t := Topology{Run: v.parts.Run()}
	seen := map[string]bool{}
	off := 0
	for w, pt := range v.topos {
		v.offsets[w] = off
		if pt == nil {
			continue
		}
		rename := map[string]string{}
		for _, n := range pt.Nodes {
			n.Worker = &w
			if seen[n.Name] {
				rename[n.Name] = fmt.Sprintf("%s@w%d", n.Name, w)
				n.Name = rename[n.Name]
			}
			seen[n.Name] = true
			t.Nodes = append(t.Nodes, n)
		}
		count := 0
		for _, l := range pt.Links {
			if l.ID >= 0 {
				count = max(count, l.ID+1)
				l.ID += off
			}
			if r, ok := rename[l.Node1]; ok {
				l.Node1 = r
			}
			t.Links = append(t.Links, l)
		}
		off += count
	}
	v.cutBase = off
	for k, c := range v.cuts {
		if !seen[c.Node1] || !seen[c.Node2] {
			continue // a part not read yet
		}
		t.Links = append(t.Links, LinkView{ID: off + k, Node1: c.Node1, Node2: c.Node2, Intf1: c.Intf1, Intf2: c.Intf2,
			Kind: "cut", Workers: []int{c.Worker1, c.Worker2}, VNI: c.VNI, Emulated: c.Emulated})
	}
	return t
}

// sample asks every worker for its part's sample and the cut links'
// counters, at once, each bounded by one interval: a worker busy with a
// long action (a measure) misses the update, the others do not wait.
func (v *clusterView) sample() *Sample {
	ctx, cancel := context.WithTimeout(context.Background(), v.opts.Interval)
	defer cancel()
	n := v.parts.Workers()
	samples := make([]*Sample, n)
	var cuts map[int]CutCounters
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			var s Sample
			if v.callJSON(ctx, w, "/api/stats", &s) == nil {
				samples[w] = &s
			}
		})
	}
	wg.Go(func() { cuts, _ = v.parts.CutCounters(ctx) }) // a failed read leaves the cut links out of this update
	wg.Wait()
	now := time.Now()

	v.pmu.Lock()
	defer v.pmu.Unlock()
	for w, s := range samples {
		if s != nil && s.Changes != v.changes[w] {
			// An emulator inserted or a link added there: read its part
			// again so the ids below are the new ones.
			v.changes[w], v.topos[w] = s.Changes, nil
		}
	}
	v.readTopologiesLocked(ctx)
	v.mergeLocked()
	out := &Sample{Time: now, Changes: v.gen}
	for w, s := range samples {
		if s == nil {
			continue
		}
		for _, l := range s.Links {
			l.ID += v.offsets[w]
			out.Links = append(out.Links, l)
		}
	}
	dt := now.Sub(v.prevTime).Seconds()
	prev := v.prevCuts
	v.prevCuts, v.prevTime = map[int]LinkSample{}, now
	for k, c := range v.cuts {
		cc, ok := cuts[c.Index]
		if !ok {
			continue
		}
		ls := LinkSample{ID: v.cutBase + k}
		ls.AB.Counters, ls.BA.Counters = cc.AB, cc.BA
		if p, ok := prev[k]; ok {
			rate(&ls.AB, p.AB, dt)
			rate(&ls.BA, p.BA, dt)
		}
		v.prevCuts[k] = ls
		out.Links = append(out.Links, ls)
	}
	return out
}

func (v *clusterView) idle() {
	v.pmu.Lock()
	v.prevCuts = nil
	v.pmu.Unlock()
}

// relay writes a worker's answer as the view's.
func relay(w http.ResponseWriter, rep Reply) {
	for k, val := range rep.Header {
		w.Header().Set(k, val)
	}
	w.WriteHeader(rep.Status)
	_, _ = w.Write(rep.Body) // the client went away: nobody to tell
}

// workerOf finds the worker of a node named in a request.
func (v *clusterView) workerOf(name string) (int, error) {
	w, ok := v.parts.WorkerOf(name)
	if !ok {
		return 0, fmt.Errorf("%w: %q", hymn.ErrUnknownNode, name)
	}
	return w, nil
}

// forwardAction sends an action to the worker holding both nodes the body
// names (in the fields a and b); an action across two workers (on a cut
// link, or a measure between their hosts) is refused.
func (v *clusterView) forwardAction(a, b string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			httpError(w, fmt.Errorf("%w: %v", errBadRequest, err))
			return
		}
		var fields map[string]any
		if err := json.Unmarshal(body, &fields); err != nil {
			httpError(w, fmt.Errorf("%w: %v", errBadRequest, err))
			return
		}
		n1, _ := fields[a].(string)
		n2, _ := fields[b].(string)
		w1, err := v.workerOf(n1)
		if err != nil {
			httpError(w, err)
			return
		}
		w2, err := v.workerOf(n2)
		if err != nil {
			httpError(w, err)
			return
		}
		if w1 != w2 {
			httpError(w, fmt.Errorf("%w: %s is on worker %d and %s on worker %d: the view acts only within one worker (a cut link's tunnel is not changed from here)", errBadRequest, n1, w1, n2, w2))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), callTimeout+60*time.Second) // a measure runs up to 60 s
		defer cancel()
		rep, err := v.parts.Call(ctx, w1, http.MethodPost, r.URL.Path, body)
		if err != nil {
			httpError(w, err)
			return
		}
		if rep.Status == http.StatusOK {
			v.logAction("%s (worker %d)", describeAction(r.URL.Path, fields), w1)
			switch r.URL.Path {
			case "/api/capture/start":
				rep.Body = v.adoptCapture(w1, rep.Body)
			case "/api/link/emu":
				// An emulator inserted changes the link's kind: read the
				// part again now, not when its sampler notices.
				v.pmu.Lock()
				v.topos[w1] = nil
				v.pmu.Unlock()
			}
		}
		relay(w, rep)
	}
}

// describeAction writes a forwarded action as the shell's command.
func describeAction(path string, f map[string]any) string {
	str := func(k string) string { s, _ := f[k].(string); return s }
	switch path {
	case "/api/link/state":
		state := "down"
		if up, _ := f["up"].(bool); up {
			state = "up"
		}
		return fmt.Sprintf("link %s %s %s", str("node1"), str("node2"), state)
	case "/api/link/emu":
		return fmt.Sprintf("emu %s %s %s %s", str("node1"), str("node2"), str("dir"), str("params"))
	case "/api/capture/start":
		return fmt.Sprintf("capture %s %s %s", str("node1"), str("node2"), str("dir"))
	}
	return fmt.Sprintf("measure %s %s --rate %s", str("from"), str("to"), str("rate"))
}

// adoptCapture gives a capture a worker started an id of the view's and
// returns the answer with that id.
func (v *clusterView) adoptCapture(worker int, body []byte) []byte {
	var c map[string]any
	if json.Unmarshal(body, &c) != nil {
		return body
	}
	local, ok := c["id"].(float64)
	if !ok {
		return body
	}
	v.mu.Lock()
	c["id"] = len(v.caps)
	v.caps = append(v.caps, capRef{worker: worker, local: int(local)})
	v.mu.Unlock()
	out, _ := json.Marshal(c) // decoded JSON encodes again
	return out
}

func (v *clusterView) capture(s string) (int, capRef, error) {
	id, err := strconv.Atoi(s)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil || id < 0 || id >= len(v.caps) {
		return 0, capRef{}, fmt.Errorf("%w: capture %q", errNotFound, s)
	}
	return id, v.caps[id], nil
}

// captureStop is POST /api/capture/stop {"id": N} with the view's id.
func (v *clusterView) captureStop(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID int `json:"id"`
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10)) // a short body fails to decode below
	if err := decode(body, &req); err != nil {
		httpError(w, err)
		return
	}
	id, c, err := v.capture(strconv.Itoa(req.ID))
	if err != nil {
		httpError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	rep, err := v.parts.Call(ctx, c.worker, http.MethodPost, "/api/capture/stop", fmt.Appendf(nil, `{"id":%d}`, c.local))
	if err != nil {
		httpError(w, err)
		return
	}
	if rep.Status == http.StatusOK {
		v.logAction("worker %d: capture stop %d", c.worker, id)
		rep.Body = renumberCapture(rep.Body, id)
	}
	relay(w, rep)
}

// renumberCapture puts the view's id in a worker's capture answer (the
// capture itself, or {"capture": ..., "stats": ...}).
func renumberCapture(body []byte, id int) []byte {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	if c, ok := m["capture"].(map[string]any); ok {
		c["id"] = id
	} else {
		m["id"] = id
	}
	out, _ := json.Marshal(m) // decoded JSON encodes again
	return out
}

// captures is GET /api/captures: the captures started from this view,
// as their workers see them now.
func (v *clusterView) captures(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	refs := slices.Clone(v.caps)
	v.mu.Unlock()
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	lists := map[int][]map[string]any{}
	out := []map[string]any{}
	for id, c := range refs {
		if _, ok := lists[c.worker]; !ok {
			var l []map[string]any
			if err := v.callJSON(ctx, c.worker, "/api/captures", &l); err != nil {
				httpError(w, err)
				return
			}
			lists[c.worker] = l
		}
		for _, m := range lists[c.worker] {
			if local, _ := m["id"].(float64); int(local) == c.local {
				m["id"] = id
				out = append(out, m)
			}
		}
	}
	writeJSON(w, out)
}

// captureFile is GET /api/capture/file?id=N&file=K, fetched from the
// capture's worker.
func (v *clusterView) captureFile(w http.ResponseWriter, r *http.Request) {
	_, c, err := v.capture(r.URL.Query().Get("id"))
	if err != nil {
		httpError(w, err)
		return
	}
	q := url.Values{"id": {strconv.Itoa(c.local)}, "file": {r.URL.Query().Get("file")}}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	rep, err := v.parts.Call(ctx, c.worker, http.MethodGet, "/api/capture/file?"+q.Encode(), nil)
	if err != nil {
		httpError(w, err)
		return
	}
	relay(w, rep)
}

// node is GET /api/node?name=N, answered by the node's worker.
func (v *clusterView) node(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	wk, err := v.workerOf(name)
	if err != nil {
		httpError(w, fmt.Errorf("%w: node %q", errNotFound, name))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	rep, err := v.parts.Call(ctx, wk, http.MethodGet, "/api/node?"+url.Values{"name": {name}}.Encode(), nil)
	if err != nil {
		httpError(w, err)
		return
	}
	var d map[string]any
	if rep.Status == http.StatusOK && json.Unmarshal(rep.Body, &d) == nil {
		d["worker"] = wk
		writeJSON(w, d)
		return
	}
	relay(w, rep)
}

// histogram is GET /api/histogram?link=ID with the view's id, answered by
// the link's worker; a cut link's emulators are the workers' own, not a
// part's links, and have none to show here.
func (v *clusterView) histogram(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.URL.Query().Get("link"))
	if err != nil {
		httpError(w, fmt.Errorf("%w: link %q", errNotFound, r.URL.Query().Get("link")))
		return
	}
	v.pmu.Lock()
	wk, local := -1, 0
	for i, off := range v.offsets {
		if id >= off && id < v.cutBase && (i+1 == len(v.offsets) || id < v.offsets[i+1]) {
			wk, local = i, id-off
		}
	}
	v.pmu.Unlock()
	if wk < 0 {
		httpError(w, fmt.Errorf("%w: link %d has no delay histogram in this view (a cut link's emulators run in its workers' tunnels)", errNotFound, id))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), callTimeout)
	defer cancel()
	rep, err := v.parts.Call(ctx, wk, http.MethodGet, "/api/histogram?link="+strconv.Itoa(local), nil)
	if err != nil {
		httpError(w, err)
		return
	}
	var d map[string]any
	if rep.Status == http.StatusOK && json.Unmarshal(rep.Body, &d) == nil {
		d["link"] = strconv.Itoa(id)
		writeJSON(w, d)
		return
	}
	relay(w, rep)
}
