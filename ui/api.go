package ui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/measure"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
)

// api serves /api/* for one network in this process: the stream, and
// the actions through the network's own calls.
type api struct {
	*stream
	net *hymn.Network
	mux *http.ServeMux

	// Guarded by the stream's mu.
	caps    []*uiCapture
	capDir  string
	ownDir  bool
	measure sync.Mutex // one measure at a time
	// capStart makes capture starts one at a time: each takes the next
	// id and its share of the byte budget (limits.go).
	capStart sync.Mutex
}

type uiCapture struct {
	ID      int      `json:"id"`
	Node1   string   `json:"node1"`
	Node2   string   `json:"node2"`
	Dir     string   `json:"dir"`
	Files   []string `json:"files"` // base names
	Running bool     `json:"running"`
	lc      *hymn.LinkCapture
	paths   []string
}

func newAPI(net *hymn.Network, opts Options) (*api, error) {
	a := &api{net: net, capDir: opts.CaptureDir}
	a.stream = newStream(opts, func() Topology { return topology(net) }, func() feed { return newSampler(net) })
	a.mux = http.NewServeMux()
	a.routes(a.mux)
	a.mux.HandleFunc("GET /api/node", a.node)
	a.mux.HandleFunc("GET /api/histogram", a.histogram)
	a.mux.HandleFunc("GET /api/captures", a.captures)
	a.mux.HandleFunc("GET /api/capture/file", a.captureFile)
	a.mux.HandleFunc("POST /api/link/state", action(a.linkState))
	a.mux.HandleFunc("POST /api/link/emu", action(a.linkEmu))
	a.mux.HandleFunc("POST /api/capture/start", action(a.captureStart))
	a.mux.HandleFunc("POST /api/capture/stop", action(a.captureStop))
	a.mux.HandleFunc("POST /api/measure", action(a.measureRun))
	return a, nil
}

func (a *api) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.mux.ServeHTTP(w, r) }

func (a *api) close() {
	if !a.closeStream() {
		return
	}
	a.mu.Lock()
	caps := a.caps
	a.mu.Unlock()
	for _, c := range caps {
		if c.Running {
			_, _ = c.lc.Stop() // closing anyway: the files are what is left
		}
	}
	if a.ownDir {
		_ = os.RemoveAll(a.capDir) // a temporary directory; nothing to tell
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(v) // the client went away: nobody to tell
}

func httpError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errBadRequest), errors.Is(err, hymn.ErrUnknownNode), errors.Is(err, hymn.ErrUnknownLink),
		errors.Is(err, hymn.ErrLinkParams), errors.Is(err, hymn.ErrNoEmulator):
		code = http.StatusBadRequest
	case errors.Is(err, errNotFound):
		code = http.StatusNotFound
	case errors.Is(err, hymn.ErrNotBuilt):
		code = http.StatusServiceUnavailable
	case errors.Is(err, errTooMany):
		code = http.StatusTooManyRequests
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()}) // as in writeJSON
}

// action decodes a JSON request body (at most 64 KiB) into the handler's
// argument and writes its result.
func action(fn func(ctx context.Context, body []byte) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if err != nil {
			httpError(w, fmt.Errorf("%w: %v", errBadRequest, err))
			return
		}
		res, err := fn(r.Context(), body)
		if err != nil {
			httpError(w, err)
			return
		}
		writeJSON(w, res)
	}
}

func decode(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	return nil
}

// nodeName checks a node name from a request.
func (a *api) nodeName(name string) error {
	if a.net.Plan().Node(name) == nil {
		return fmt.Errorf("%w: %q", hymn.ErrUnknownNode, name)
	}
	return nil
}

type linkStateReq struct {
	Node1 string `json:"node1"`
	Node2 string `json:"node2"`
	Up    bool   `json:"up"`
}

// linkState is POST /api/link/state: the shell's "link n1 n2 up|down".
func (a *api) linkState(_ context.Context, body []byte) (any, error) {
	var req linkStateReq
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	if err := a.linkEnds(req.Node1, req.Node2); err != nil {
		return nil, err
	}
	state := "down"
	if req.Up {
		state = "up"
	}
	if err := a.net.ConfigLinkStatus(req.Node1, req.Node2, state); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	a.mu.Lock()
	if s, ok := a.feed.(*sampler); ok {
		s.stale()
	}
	a.mu.Unlock()
	a.logAction("link %s %s %s", req.Node1, req.Node2, state)
	return map[string]string{"state": state}, nil
}

// linkEnds checks a request's two node names.
func (a *api) linkEnds(node1, node2 string) error {
	for _, n := range []string{node1, node2} {
		if err := a.nodeName(n); err != nil {
			return err
		}
	}
	return nil
}

// linkDirection checks a request's link ends and reads its direction
// (a>b, b>a or both, the default), as the shell's emu and capture do.
func (a *api) linkDirection(node1, node2, d string) (hymn.Direction, error) {
	var zero hymn.Direction
	if err := a.linkEnds(node1, node2); err != nil {
		return zero, err
	}
	if d == "" {
		d = "both"
	}
	dir, err := hymn.ParseDirection(d)
	if err != nil {
		return zero, fmt.Errorf("%w: dir %q: %v", errBadRequest, d, err)
	}
	return dir, nil
}

type linkEmuReq struct {
	Node1  string `json:"node1"`
	Node2  string `json:"node2"`
	Dir    string `json:"dir"` // a>b, b>a or both (a is node1)
	Params string `json:"params"`
}

// linkEmu is POST /api/link/emu: the shell's "emu n1 n2 [a>b|b>a] params".
func (a *api) linkEmu(_ context.Context, body []byte) (any, error) {
	var req linkEmuReq
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	dir, err := a.linkDirection(req.Node1, req.Node2, req.Dir)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(req.Params) == "" || len(req.Params) > 4096 {
		return nil, fmt.Errorf("%w: params: give the emulator's parameters (delay 10ms ...)", errBadRequest)
	}
	if err := a.net.SetLinkParamsFrom(topo.RemoteFiles("the live view"), req.Node1, req.Node2, dir, req.Params); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	a.logAction("emu %s %s %s %s", req.Node1, req.Node2, req.Dir, req.Params)
	st, err := a.net.LinkStats(req.Node1, req.Node2)
	if err != nil {
		return nil, err
	}
	return map[string]string{"ab": st.ForwardConfig.String(), "ba": st.ReverseConfig.String()}, nil
}

// linkByID finds a link of the latest topology.
func (a *api) linkByID(s string) (hymn.LinkInfo, error) {
	id, err := strconv.Atoi(s)
	ls := a.net.Links()
	if err != nil || id < 0 || id >= len(ls) {
		return hymn.LinkInfo{}, fmt.Errorf("%w: link %q", errNotFound, s)
	}
	return ls[id], nil
}

// histogram is GET /api/histogram?link=ID: the realised delay histogram
// of an emulated link, both directions.
func (a *api) histogram(w http.ResponseWriter, r *http.Request) {
	l, err := a.linkByID(r.URL.Query().Get("link"))
	if err != nil {
		httpError(w, err)
		return
	}
	f, b, err := a.net.LinkDelayHistograms(l.Node1, l.Node2)
	if err != nil {
		httpError(w, err)
		return
	}
	writeJSON(w, map[string]any{"link": r.URL.Query().Get("link"), "ab": bins(f), "ba": bins(b)})
}

// NodeDetails is GET /api/node?name=N: a node's interfaces as the kernel
// has them now.
type NodeDetails struct {
	NodeView
	Live []LiveIntf `json:"live,omitempty"`
	// LiveError says why a VM's live interfaces could not be read.
	LiveError string `json:"live_error,omitempty"`
}

// LiveIntf is one interface of a running node.
type LiveIntf struct {
	Name    string   `json:"name"`
	MAC     string   `json:"mac,omitempty"`
	MTU     int      `json:"mtu"`
	State   string   `json:"state"`
	Addrs   []string `json:"addrs,omitempty"`
	RX      Counters `json:"rx"`
	TX      Counters `json:"tx"`
	Comment string   `json:"comment,omitempty"`
}

func (a *api) node(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	var nv *NodeView
	for _, n := range topology(a.net).Nodes {
		if n.Name == name {
			nv = &n
			break
		}
	}
	if nv == nil {
		httpError(w, fmt.Errorf("%w: node %q", errNotFound, name))
		return
	}
	d := NodeDetails{NodeView: *nv}
	if node, err := a.net.Node(name); err == nil && nv.Backend == "netns" {
		// A node gone meanwhile shows its planned interfaces only. A
		// switch in a namespace shared with other switches shows only
		// its own ports (and the namespace's loopback).
		var own map[string]bool
		if sh, ok := node.(interface{ SharesNamespace() bool }); ok && sh.SharesNamespace() {
			own = map[string]bool{"lo": true}
			for _, i := range nv.Intfs {
				own[i.Name] = true
			}
		}
		_ = node.Netlink(func(h *netlink.Handle) error {
			list, err := h.LinkList()
			if err != nil {
				return err
			}
			for _, l := range list {
				at := l.Attrs()
				if own != nil && !own[at.Name] {
					continue
				}
				li := LiveIntf{Name: at.Name, MTU: at.MTU, State: at.OperState.String()}
				if at.HardwareAddr != nil {
					li.MAC = at.HardwareAddr.String()
				}
				if s := at.Statistics; s != nil {
					li.RX = Counters{Packets: s.RxPackets, Bytes: s.RxBytes, Dropped: s.RxDropped}
					li.TX = Counters{Packets: s.TxPackets, Bytes: s.TxBytes, Dropped: s.TxDropped}
				}
				addrs, _ := h.AddrList(l, netlink.FAMILY_ALL)
				for _, ad := range addrs {
					li.Addrs = append(li.Addrs, ad.IPNet.String())
				}
				d.Live = append(d.Live, li)
			}
			return nil
		})
	}
	if node, err := a.net.Node(name); err == nil && nv.Backend == "vm" {
		// A VM's interfaces live in its guest: one command there.
		if live, err := guestInterfaces(r.Context(), node); err != nil {
			d.LiveError = err.Error()
		} else {
			d.Live = live
		}
	}
	writeJSON(w, d)
}

type captureReq struct {
	Node1 string `json:"node1"`
	Node2 string `json:"node2"`
	Dir   string `json:"dir"`
}

// captureStart is POST /api/capture/start: the shell's "capture n1 n2
// [dir]", into the view's capture directory.
func (a *api) captureStart(_ context.Context, body []byte) (any, error) {
	var req captureReq
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	dir, err := a.linkDirection(req.Node1, req.Node2, req.Dir)
	if err != nil {
		return nil, err
	}
	a.capStart.Lock()
	defer a.capStart.Unlock()
	a.mu.Lock()
	limit, err := a.captureRoomLocked()
	if err != nil {
		a.mu.Unlock()
		return nil, err
	}
	if a.capDir == "" {
		d, err := os.MkdirTemp("", "hymn-ui-captures-")
		if err != nil {
			a.mu.Unlock()
			return nil, fmt.Errorf("capture directory: %w", err)
		}
		a.capDir, a.ownDir = d, true
	}
	id := len(a.caps)
	file := filepath.Join(a.capDir, fmt.Sprintf("%d-%s-%s.pcapng", id, req.Node1, req.Node2))
	a.mu.Unlock()
	lc, err := a.net.StartCapture(hymn.CaptureSpec{Node1: req.Node1, Node2: req.Node2, Dir: dir, File: file, Limit: limit})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRequest, err)
	}
	c := &uiCapture{ID: id, Node1: req.Node1, Node2: req.Node2, Dir: req.Dir, Running: true, lc: lc, paths: lc.Files}
	for _, f := range lc.Files {
		c.Files = append(c.Files, filepath.Base(f))
	}
	a.mu.Lock()
	a.caps = append(a.caps, c)
	a.mu.Unlock()
	a.logAction("capture %s %s %s -> %s", req.Node1, req.Node2, req.Dir, strings.Join(lc.Files, ", "))
	return c, nil
}

// captureStop is POST /api/capture/stop {"id": N}.
func (a *api) captureStop(_ context.Context, body []byte) (any, error) {
	var req struct {
		ID int `json:"id"`
	}
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	c, err := a.capture(req.ID)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	running := c.Running
	c.Running = false
	a.mu.Unlock()
	if !running {
		return c, nil
	}
	st, err := c.lc.Stop()
	if err != nil {
		return nil, err
	}
	a.logAction("capture stop %s %s", c.Node1, c.Node2)
	return map[string]any{"capture": c, "stats": st}, nil
}

func (a *api) capture(id int) (*uiCapture, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if id < 0 || id >= len(a.caps) {
		return nil, fmt.Errorf("%w: capture %d", errNotFound, id)
	}
	return a.caps[id], nil
}

func (a *api) captures(w http.ResponseWriter, _ *http.Request) {
	a.mu.Lock()
	out := append([]*uiCapture{}, a.caps...)
	a.mu.Unlock()
	writeJSON(w, out)
}

// captureFile is GET /api/capture/file?id=N&file=K: the K-th pcapng file
// of a capture the view started (a stopped one: a running file is still
// being written). Only files the view made can be named.
func (a *api) captureFile(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.Atoi(r.URL.Query().Get("id"))
	if err != nil {
		httpError(w, fmt.Errorf("%w: id", errBadRequest))
		return
	}
	c, err := a.capture(id)
	if err != nil {
		httpError(w, err)
		return
	}
	k, err := strconv.Atoi(r.URL.Query().Get("file"))
	if err != nil || k < 0 || k >= len(c.paths) {
		httpError(w, fmt.Errorf("%w: file", errNotFound))
		return
	}
	a.mu.Lock()
	running := c.Running
	a.mu.Unlock()
	if running {
		httpError(w, fmt.Errorf("%w: stop the capture first", errBadRequest))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", c.Files[k]))
	http.ServeFile(w, r, c.paths[k])
}

type measureReq struct {
	From     string  `json:"from"`
	To       string  `json:"to"`
	Rate     string  `json:"rate"`     // packets/s, bit/s (1M) as hymn measure --rate; one rate
	Duration float64 `json:"duration"` // seconds (default 2, at most 60)
	Frame    int     `json:"frame"`    // bytes (default 64)
}

// MeasureResult is POST /api/measure's answer: measure's report and, per
// rate, its latency series (thinned to at most 2000 points) for the plot.
type MeasureResult struct {
	Report *measure.Report `json:"report"`
	// Series are [send time in s from the first packet, one-way delay in
	// µs] per rate.
	Series [][][2]float64 `json:"series"`
}

// measureRun is POST /api/measure: the shell's "measure src dst --rate R
// --duration D".
func (a *api) measureRun(ctx context.Context, body []byte) (any, error) {
	var req measureReq
	if err := decode(body, &req); err != nil {
		return nil, err
	}
	for _, n := range []string{req.From, req.To} {
		if err := a.nodeName(n); err != nil {
			return nil, err
		}
	}
	if req.Frame == 0 {
		req.Frame = 64
	}
	if req.Duration == 0 {
		req.Duration = 2
	}
	if req.Duration < 0.1 || req.Duration > 60 {
		return nil, fmt.Errorf("%w: duration %gs: from 0.1 to 60", errBadRequest, req.Duration)
	}
	if req.Rate == "" {
		req.Rate = "1000"
	}
	rates, err := measure.ParseRates(req.Rate, req.Frame)
	if err != nil || len(rates) != 1 {
		return nil, fmt.Errorf("%w: rate %q: one rate, as hymn measure --rate takes it (1000, 50k, 10M)", errBadRequest, req.Rate)
	}
	if !a.measure.TryLock() {
		return nil, fmt.Errorf("%w: a measure runs already", errBadRequest)
	}
	defer a.measure.Unlock()
	a.logAction("measure %s %s --rate %s --duration %gs --frame %d", req.From, req.To, req.Rate, req.Duration, req.Frame)
	cfg := measure.Config{Rates: rates, Frame: req.Frame, Duration: time.Duration(req.Duration * float64(time.Second)), Series: 2000}
	rep, err := a.net.Measure(ctx, req.From, req.To, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: measure: %v", errBadRequest, err)
	}
	res := &MeasureResult{Report: rep}
	for _, r := range rep.Results {
		var s [][2]float64
		for _, p := range r.Series {
			s = append(s, [2]float64{float64(p.Sent-r.Series[0].Sent) / 1e9, float64(p.Delay) / 1e3})
		}
		res.Series = append(res.Series, s)
	}
	if len(rep.Results) > 0 {
		l := rep.Results[0].Latency
		a.logAction("measure %s %s: p50 %.1f us, p99 %.1f us, loss %.4g", req.From, req.To, l.P50, l.P99, rep.Results[0].Loss)
	}
	return res, nil
}
