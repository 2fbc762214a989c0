package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hymn-net/hymn/internal/testenv"
)

// fakeParts is linear,4 split over two workers, each answering the view's
// API from a synthetic part: hosts and switches 1-2 on worker 0, 3-4 on
// worker 1, the cut link s3-s2 between them. Every sampling counts 100
// more packets on every link; the requests each worker got are recorded.
type fakeParts struct {
	mu    sync.Mutex
	reads int
	calls [2][]string // method, target and body per call
}

func (f *fakeParts) Run() string  { return "aaaa+bbbb" }
func (f *fakeParts) Workers() int { return 2 }

func (f *fakeParts) WorkerOf(node string) (int, bool) {
	if len(node) != 2 || node[1] < '1' || node[1] > '4' || (node[0] != 'h' && node[0] != 's') {
		return 0, false
	}
	return int(node[1]-'1') / 2, true
}

// part is worker w's topology: its ids start at 0.
func (f *fakeParts) part(w int) Topology {
	t := Topology{Run: [2]string{"aaaa", "bbbb"}[w]}
	a, b := 2*w+1, 2*w+2
	for _, i := range []int{a, b} {
		t.Nodes = append(t.Nodes, NodeView{Name: fmt.Sprintf("h%d", i), Role: "host", Backend: "netns"},
			NodeView{Name: fmt.Sprintf("s%d", i), Role: "switch", Backend: "netns"})
		t.Links = append(t.Links, LinkView{ID: len(t.Links), Node1: fmt.Sprintf("h%d", i), Node2: fmt.Sprintf("s%d", i), Kind: "veth"})
	}
	t.Links = append(t.Links, LinkView{ID: len(t.Links), Node1: fmt.Sprintf("s%d", b), Node2: fmt.Sprintf("s%d", a), Kind: "veth"})
	// Each worker runs a controller of the same name.
	t.Nodes = append(t.Nodes, NodeView{Name: "c0", Role: "controller", Backend: "process"})
	t.Links = append(t.Links, LinkView{ID: -1, Node1: "c0", Node2: fmt.Sprintf("s%d", a), Kind: "control"})
	return t
}

func (f *fakeParts) count() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return uint64(100 * f.reads)
}

func (f *fakeParts) Call(_ context.Context, w int, method, target string, body []byte) (Reply, error) {
	f.mu.Lock()
	f.calls[w] = append(f.calls[w], method+" "+target+" "+string(body))
	f.mu.Unlock()
	js := func(v any) (Reply, error) {
		b, _ := json.Marshal(v)
		return Reply{Status: http.StatusOK, Header: map[string]string{"Content-Type": "application/json"}, Body: b}, nil
	}
	switch {
	case target == "/api/topology":
		return js(f.part(w))
	case target == "/api/stats":
		n := f.count()
		s := Sample{Time: time.Now()}
		for i := range 3 {
			up := true
			c := Counters{Packets: n, Bytes: 100 * n}
			s.Links = append(s.Links, LinkSample{ID: i, Up: &up, AB: DirSample{Counters: c, PPS: 100}, BA: DirSample{Counters: c, PPS: 100}})
		}
		return js(s)
	case strings.HasPrefix(target, "/api/histogram?link="):
		return js(map[string]any{"link": strings.TrimPrefix(target, "/api/histogram?link="), "ab": []HistBin{}, "ba": []HistBin{}})
	case target == "/api/capture/start":
		return js(map[string]any{"id": 7, "files": []string{"x.pcapng"}, "running": true})
	case target == "/api/captures":
		return js([]map[string]any{{"id": 7, "running": true}})
	case target == "/api/capture/stop":
		return js(map[string]any{"capture": map[string]any{"id": 7}, "stats": nil})
	case method == http.MethodPost:
		return js(map[string]string{"ok": "yes"})
	}
	return Reply{Status: http.StatusNotFound, Body: []byte(`{"error":"not found"}`)}, nil
}

func (f *fakeParts) CutLinks() []CutLink {
	return []CutLink{{Index: 5, Node1: "s3", Node2: "s2", Intf1: "s3-eth2", Intf2: "s2-eth3", Worker1: 1, Worker2: 0, VNI: 4105}}
}

func (f *fakeParts) CutCounters(context.Context) (map[int]CutCounters, error) {
	n := f.count()
	return map[int]CutCounters{5: {AB: Counters{Packets: n, Bytes: 64 * n}, BA: Counters{Packets: 2 * n, Bytes: 64 * n}}}, nil
}

func (f *fakeParts) lastCall(w int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls[w]) == 0 {
		return ""
	}
	return f.calls[w][len(f.calls[w])-1]
}

// The split network's view merges the parts: ids after the previous
// worker's, a second controller renamed, the cut link last with its
// workers and VNI; samples carry the parts' links under those ids and the
// cut link's rates; actions go to the worker holding both nodes, with ids
// translated back; one across workers is refused.
func TestClusterViewMerge(t *testing.T) {
	f := &fakeParts{}
	opts := Options{Interval: time.Second}
	if err := opts.fill(); err != nil {
		t.Fatal(err)
	}
	v := newClusterView(f, opts)
	defer v.closeStream()
	topo := v.topology()
	var names []string
	for _, n := range topo.Nodes {
		names = append(names, fmt.Sprintf("%s@%d", n.Name, *n.Worker))
	}
	if got := strings.Join(names, " "); got != "h1@0 s1@0 h2@0 s2@0 c0@0 h3@1 s3@1 h4@1 s4@1 c0@w1@1" {
		t.Errorf("nodes %s", got)
	}
	var links []string
	for _, l := range topo.Links {
		links = append(links, fmt.Sprintf("%d:%s-%s:%s", l.ID, l.Node1, l.Node2, l.Kind))
	}
	if got := strings.Join(links, " "); got != "0:h1-s1:veth 1:h2-s2:veth 2:s2-s1:veth -1:c0-s1:control 3:h3-s3:veth 4:h4-s4:veth 5:s4-s3:veth -1:c0@w1-s3:control 6:s3-s2:cut" {
		t.Errorf("links %s", got)
	}
	if cut := topo.Links[len(topo.Links)-1]; cut.VNI != 4105 || fmt.Sprint(cut.Workers) != "[1 0]" {
		t.Errorf("cut link %+v", cut)
	}

	s1 := v.sample()
	time.Sleep(50 * time.Millisecond)
	s2 := v.sample()
	ids := map[int]LinkSample{}
	for _, l := range s2.Links {
		ids[l.ID] = l
	}
	if s1.Changes != 0 || s2.Changes != 0 {
		t.Errorf("changes %d, %d before any change: the page would draw the graph again", s1.Changes, s2.Changes)
	}
	if len(s1.Links) != 7 || len(ids) != 7 {
		t.Fatalf("samples of %d and %d links, want 7: %+v", len(s1.Links), len(ids), s2.Links)
	}
	if c := ids[6]; c.AB.Packets <= linkOf(s1, 6).AB.Packets || c.AB.PPS <= 0 || c.BA.PPS <= c.AB.PPS {
		t.Errorf("cut link sample %+v after %+v: counters and rates (ba twice ab)", c, linkOf(s1, 6))
	}

	h := httptest.NewServer(v)
	defer h.Close()
	post := func(path, body string) (int, string) {
		resp, err := http.Post(h.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(h.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := post("/api/link/emu", `{"node1":"h4","node2":"s4","dir":"a>b","params":"delay 5ms"}`); code != 200 ||
		f.lastCall(1) != `POST /api/link/emu {"node1":"h4","node2":"s4","dir":"a>b","params":"delay 5ms"}` {
		t.Errorf("emu h4 s4: %d, worker 1 got %q", code, f.lastCall(1))
	}
	if s := v.sample(); s.Changes == 0 {
		t.Errorf("no change after an emulator went in: the page would keep the link's old kind")
	}
	if code, body := post("/api/link/state", `{"node1":"s3","node2":"s2","up":false}`); code != 400 || !strings.Contains(body, "worker 1") {
		t.Errorf("the cut link down: %d %s", code, body)
	}
	if code, _ := post("/api/measure", `{"from":"h1","to":"h9"}`); code != 400 {
		t.Errorf("measure to an unknown node: %d", code)
	}
	if code, body := get("/api/histogram?link=4"); code != 200 || f.lastCall(1) != "GET /api/histogram?link=1 " || !strings.Contains(body, `"link": "4"`) {
		t.Errorf("histogram of link 4: %d %s; worker 1 got %q", code, body, f.lastCall(1))
	}
	if code, _ := get("/api/histogram?link=6"); code != 404 {
		t.Errorf("histogram of the cut link: %d", code)
	}
	if code, body := post("/api/capture/start", `{"node1":"h1","node2":"s1"}`); code != 200 || !strings.Contains(body, `"id":0`) {
		t.Errorf("capture start: %d %s", code, body)
	}
	if code, body := get("/api/captures"); code != 200 || !strings.Contains(body, `"id": 0`) {
		t.Errorf("captures: %d %s", code, body)
	}
	if code, body := post("/api/capture/stop", `{"id":0}`); code != 200 || f.lastCall(0) != `POST /api/capture/stop {"id":7}` || !strings.Contains(body, `"id":0`) {
		t.Errorf("capture stop: %d %s; worker 0 got %q", code, body, f.lastCall(0))
	}
	if code, _ := post("/api/capture/stop", `{"id":1}`); code != 404 {
		t.Errorf("stop of an unknown capture: %d", code)
	}
	v.mu.Lock()
	lg := v.log
	v.mu.Unlock()
	if len(lg) != 3 || lg[0].Text != "emu h4 s4 a>b delay 5ms (worker 1)" {
		t.Errorf("log %+v", lg)
	}
}

func linkOf(s *Sample, id int) LinkSample {
	for _, l := range s.Links {
		if l.ID == id {
			return l
		}
	}
	return LinkSample{}
}

// The page of a split network in headless chromium: nodes bordered by
// worker, the cut link drawn with its VNI and described as a tunnel, its
// rates from the stream, no actions on it.
func TestBrowserClusterView(t *testing.T) {
	testenv.Tools(t, "chromium")
	opts := Options{Token: "t"}
	if err := opts.fill(); err != nil {
		t.Fatal(err)
	}
	v := newClusterView(&fakeParts{}, opts)
	t.Cleanup(func() { v.closeStream() })
	srv := httptest.NewServer(&gate{token: "t", backend: v, run: "aaaa+bbbb"})
	t.Cleanup(srv.Close) // after chromium ends (headless), which holds the event stream open
	tctx := headless(t, t.TempDir(), 1200, 800, 2*time.Minute)
	if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/?token=t"),
		chromedp.Poll[chromedp.Void](`window.hymnUI && hymnUI.ready`, chromedp.WithPollingTimeout(time.Minute)),
		// Two stats events: the cut link has rates.
		chromedp.Poll[chromedp.Void](`hymnUI.samples.get(6) && hymnUI.samples.get(6).ab.pps > 0`, chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Run(tctx, chromedp.Evaluate[map[string]any](`({nodes: hymnUI.cy.nodes().length, edges: hymnUI.cy.edges().length,
		cut: hymnUI.cy.getElementById('l6').hasClass('cut'), label: hymnUI.cy.getElementById('l6').data('base'),
		w0: hymnUI.cy.getElementById('n:h1').hasClass('w0'), w1: hymnUI.cy.getElementById('n:h4').hasClass('w1')})`))
	if err != nil {
		t.Fatal(err)
	}
	if res["nodes"] != float64(10) || res["edges"] != float64(9) || res["cut"] != true || res["label"] != "VNI 4105" || res["w0"] != true || res["w1"] != true {
		t.Errorf("graph %v: want 10 nodes (two controllers), 9 edges, l6 a cut link labelled VNI 4105, h1 on w0, h4 on w1", res)
	}
	details, err := chromedp.Run(tctx, chromedp.Evaluate[string](`hymnUI.select('l6'), document.getElementById('details').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(details, "cut link: VXLAN VNI 4105 from worker 1 (s3-eth2) to worker 0 (s2-eth3)") || strings.Contains(details, "Set link down") {
		t.Errorf("the cut link's details: %q", details)
	}
	png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	dirs := []string{t.ArtifactDir()}
	if d := os.Getenv("HYMN_UI_SHOTS"); d != "" {
		dirs = append(dirs, d)
	}
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "ui-cluster.png"), png, 0o644); err != nil {
			t.Error(err)
		}
	}
}
