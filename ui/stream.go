package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hymn-net/hymn"
)

// feed is what a view's stream samples: the links of a network in this
// process (sampler) or of one split over workers (clusterFeed).
type feed interface {
	// sample reads every link now; Sample.Changes counts the times the
	// list of links changed.
	sample() *Sample
	// idle says nobody watches: release what sampling holds (sockets
	// keep namespaces alive) and forget the last sample (rates would
	// span the idle time).
	idle()
}

// stream is the part of a view that does not depend on where the
// network runs: sampling while someone watches, the snapshot, the event
// stream, the log of actions.
type stream struct {
	opts    Options
	topo    func() Topology
	newFeed func() feed

	mu       sync.Mutex
	feed     feed
	latest   *Sample
	sent     map[int]sentLink // what the stream last said of each link
	subs     map[chan []byte]struct{}
	wantTill time.Time // keep sampling until then (a snapshot asked)
	running  bool
	sentGen  int // the feed's changes when the stream last said "topology"
	log      []LogLine
	closed   bool
	stopLoop chan struct{}
}

func newStream(opts Options, topo func() Topology, newFeed func() feed) *stream {
	return &stream{opts: opts, topo: topo, newFeed: newFeed, sent: map[int]sentLink{}, subs: map[chan []byte]struct{}{}, stopLoop: make(chan struct{})}
}

// routes adds the stream's read-only requests to mux.
func (a *stream) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/snapshot", a.snapshot)
	mux.HandleFunc("GET /api/topology", a.topology)
	mux.HandleFunc("GET /api/stats", a.stats)
	mux.HandleFunc("GET /api/events", a.events)
}

// closeStream ends the loop and every open stream; it says whether this
// call closed it (false: closed before).
func (a *stream) closeStream() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return false
	}
	a.closed = true
	close(a.stopLoop)
	if a.feed != nil {
		a.feed.idle()
	}
	for ch := range a.subs {
		close(ch)
		delete(a.subs, ch)
	}
	return true
}

// LogLine is one action taken from a page, as the stream's "log" event
// and the snapshot's "log" give it.
type LogLine struct {
	Time time.Time `json:"time"`
	Text string    `json:"text"`
}

// current returns a sample no older than one interval, sampling now if
// the loop is not running, and keeps the loop running for a while so a
// client polling the snapshot gets rates.
func (a *stream) current() *Sample {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.wantTill = time.Now().Add(10 * a.opts.Interval)
	if a.latest == nil || time.Since(a.latest.Time) > 2*a.opts.Interval {
		a.sampleLocked()
	}
	a.startLoopLocked()
	return a.latest
}

func (a *stream) sampleLocked() {
	if a.feed == nil {
		a.feed = a.newFeed()
	}
	a.latest = a.feed.sample()
}

// Snapshot is GET /api/snapshot: the topology, the latest sample and the
// log of actions.
type Snapshot struct {
	Topology Topology  `json:"topology"`
	Stats    *Sample   `json:"stats"`
	Log      []LogLine `json:"log"`
	Interval float64   `json:"interval_s"`
}

func (a *stream) snapshot(w http.ResponseWriter, _ *http.Request) {
	st := a.current()
	a.mu.Lock()
	lg := append([]LogLine(nil), a.log...)
	a.mu.Unlock()
	writeJSON(w, Snapshot{Topology: a.topo(), Stats: st, Log: lg, Interval: a.opts.Interval.Seconds()})
}

func (a *stream) topology(w http.ResponseWriter, _ *http.Request) { writeJSON(w, a.topo()) }

// stats is GET /api/stats: the latest sample alone (what a split
// network's view asks each worker for every interval).
func (a *stream) stats(w http.ResponseWriter, _ *http.Request) { writeJSON(w, a.current()) }

// startLoopLocked starts the sampling loop unless it runs: it samples
// every interval while a stream is open or a snapshot was asked for
// recently, and stops by itself after, so an unwatched network costs
// nothing.
func (a *stream) startLoopLocked() {
	if a.running || a.closed {
		return
	}
	a.running = true
	go a.loop()
}

func (a *stream) loop() {
	t := time.NewTicker(a.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-a.stopLoop:
			return
		case <-t.C:
		}
		a.mu.Lock()
		if len(a.subs) == 0 && time.Now().After(a.wantTill) {
			a.running = false
			a.latest = nil // rates would span the idle time
			if a.feed != nil {
				a.feed.idle()
			}
			a.mu.Unlock()
			return
		}
		a.sampleLocked()
		if a.latest.Changes != a.sentGen {
			a.sentGen = a.latest.Changes
			a.broadcastLocked(sse("topology", map[string]int{"links": len(a.latest.Links)}))
			a.sent = map[int]sentLink{}
		}
		if len(a.subs) > 0 {
			a.broadcastLocked(sse("stats", a.diffLocked()))
		}
		a.mu.Unlock()
	}
}

// diffLocked is the latest sample's links that changed since the stream
// last sent them: at rest a large network's update is nearly empty.
func (a *stream) diffLocked() *Sample {
	d := &Sample{Time: a.latest.Time, Changes: a.latest.Changes}
	for _, l := range a.latest.Links {
		now := sentOf(l)
		if prev, ok := a.sent[l.ID]; ok && prev.same(now) {
			continue
		}
		a.sent[l.ID] = now
		d.Links = append(d.Links, l)
	}
	return d
}

// sentLink is what the stream said of a link: a plain link's state and
// counters as a value (comparing them costs nothing; marshalling 2000
// links to compare their JSON was a fifth of the sampling loop's CPU), the JSON
// of one with an emulator or a schedule, whose views hold pointers.
type sentLink struct {
	plain plainSample
	json  []byte
}

type plainSample struct {
	known, up bool
	ab, ba    DirSample
}

func sentOf(l LinkSample) sentLink {
	if l.AB.Emu != nil || l.BA.Emu != nil || l.Sched != nil {
		b, _ := json.Marshal(l) // plain values, maps and pointers to them: cannot fail
		return sentLink{json: b}
	}
	p := plainSample{known: l.Up != nil, ab: l.AB, ba: l.BA}
	if l.Up != nil {
		p.up = *l.Up
	}
	return sentLink{plain: p}
}

func (s sentLink) same(o sentLink) bool {
	if s.json != nil || o.json != nil {
		return bytes.Equal(s.json, o.json)
	}
	return s.plain == o.plain
}

func (a *stream) broadcastLocked(msg []byte) {
	for ch := range a.subs {
		select {
		case ch <- msg:
		default: // a client too slow for the stream misses an update
		}
	}
}

func sse(event string, v any) []byte {
	b, _ := json.Marshal(v)
	return []byte("event: " + event + "\ndata: " + string(b) + "\n\n")
}

// events is GET /api/events: a server-sent event stream. It opens with
// "stats" carrying every link and a "log" for each action so far, then
// sends every interval a "stats" with the links that changed, a "log" for
// each action, and "topology" when links were added or changed kind (the
// client fetches the topology again).
func (a *stream) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, errors.New("streaming unsupported"))
		return
	}
	st := a.current()
	ch := make(chan []byte, 16)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		httpError(w, hymn.ErrNotBuilt)
		return
	}
	if n := a.opts.MaxStreams; n > 0 && len(a.subs) >= n {
		a.mu.Unlock()
		httpError(w, fmt.Errorf("%w: %d event streams are open, the view's limit: close a page first", errTooMany, n))
		return
	}
	a.subs[ch] = struct{}{}
	// Lines logged from here on come through ch.
	backlog := append([]LogLine(nil), a.log...)
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.subs, ch)
		a.mu.Unlock()
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(sse("stats", st)); err != nil {
		return
	}
	for _, l := range backlog {
		if _, err := w.Write(sse("log", l)); err != nil {
			return
		}
	}
	fl.Flush()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			if _, err := w.Write(msg); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// errTooMany marks a request beyond one of the view's limits (429): event
// streams, captures running, capture bytes.
var errTooMany = errors.New("too many requests")

// logAction records an action in the run's log and on every open page.
func (a *stream) logAction(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if a.opts.Log != nil {
		a.opts.Log.Infof("*** ui: %s\n", text)
	}
	line := LogLine{Time: time.Now(), Text: text}
	a.mu.Lock()
	a.log = append(a.log, line)
	if len(a.log) > 200 {
		a.log = a.log[len(a.log)-200:]
	}
	a.broadcastLocked(sse("log", line))
	a.mu.Unlock()
}
