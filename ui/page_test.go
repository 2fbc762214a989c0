package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hymn-net/hymn/internal/testenv"
)

// fakeAPI serves a synthetic topology, for page tests that need no
// network: a line of k switches with a host each (linear,k).
func fakeAPI(k int) http.Handler {
	var t Topology
	t.Run = "0000000000000000"
	for i := 1; i <= k; i++ {
		t.Nodes = append(t.Nodes, NodeView{Name: fmt.Sprintf("h%d", i), Role: "host", Backend: "netns"})
	}
	for i := 1; i <= k; i++ {
		t.Nodes = append(t.Nodes, NodeView{Name: fmt.Sprintf("s%d", i), Role: "switch", Backend: "netns"})
	}
	for i := 1; i <= k; i++ {
		t.Links = append(t.Links, LinkView{ID: len(t.Links), Node1: fmt.Sprintf("h%d", i), Node2: fmt.Sprintf("s%d", i), Kind: "veth"})
	}
	for i := 2; i <= k; i++ {
		t.Links = append(t.Links, LinkView{ID: len(t.Links), Node1: fmt.Sprintf("s%d", i), Node2: fmt.Sprintf("s%d", i-1), Kind: "veth"})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/topology", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, t) })
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := w.Write(sse("stats", &Sample{Time: time.Now()})); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
	return mux
}

// headless starts chromium with a fresh profile in dir and a window of
// w×h, for tests of this package that need no network; it ends with the
// test or after timeout.
func headless(t *testing.T, dir string, w, h int, timeout time.Duration) context.Context {
	t.Helper()
	path, _ := exec.LookPath("chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.NoFirstRun, chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(dir), chromedp.WindowSize(w, h))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	tctx, cancelT := context.WithTimeout(ctx, timeout)
	t.Cleanup(func() { cancelT(); cancel(); cancelAlloc() })
	if err := chromedp.Do(tctx); err != nil {
		t.Fatal(err)
	}
	return tctx
}

// ChromiumCPU is the CPU time (user and system) of every process of the
// chromium started with this profile directory: the page's cost, which a
// loaded machine stretches in wall time but not here.
func ChromiumCPU(profile string) time.Duration {
	ents, _ := os.ReadDir("/proc")
	var ticks uint64
	for _, e := range ents {
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), "--user-data-dir="+profile) {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's ")": state is 3, utime 14, stime 15.
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+1:]))
		if len(f) > 12 {
			u, _ := strconv.ParseUint(f[11], 10, 64)
			s, _ := strconv.ParseUint(f[12], 10, 64)
			ticks += u + s
		}
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// TestPageLarge times the page of a synthetic linear,1000 (2000 nodes) in
// headless chromium: first paint and the complete graph.
func TestPageLarge(t *testing.T) {
	testenv.Tools(t, "chromium")
	srv := httptest.NewServer(&gate{token: "t", backend: fakeAPI(1000), run: "0000000000000000"})
	t.Cleanup(srv.Close) // after chromium ends (headless), which holds the event stream open
	profile := t.TempDir()
	tctx := headless(t, profile, 1400, 900, 3*time.Minute)
	cpu0 := ChromiumCPU(profile)
	layout := os.Getenv("HYMN_UI_LAYOUT")
	if err := chromedp.Do(tctx, chromedp.Navigate(srv.URL+"/?token=t&layout="+layout),
		chromedp.Poll[chromedp.Void](`window.hymnUI && hymnUI.ready`, chromedp.WithPollingTimeout(2*time.Minute)),
		// The stream's first event says "live"; an error on the page says "error: ...".
		chromedp.Poll[chromedp.Void](`document.getElementById('status').className !== ''`, chromedp.WithPollingTimeout(time.Minute))); err != nil {
		t.Fatal(err)
	}
	res, err := chromedp.Run(tctx, chromedp.Evaluate[map[string]float64](`({fp: (performance.getEntriesByName('first-contentful-paint')[0]||{startTime:-1}).startTime,
		shell: hymnUI.marks.shell, topology: hymnUI.marks.topology, created: hymnUI.marks['cy-created'], layout: hymnUI.marks['layout-done'], complete: hymnUI.marks['graph-complete'], nodes: hymnUI.cy.nodes().length})`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("synthetic linear,1000 (%v nodes): first paint %.0f ms, script ran %.0f ms, topology %.0f ms, cytoscape made %.0f ms, layout done %.0f ms, graph complete %.0f ms",
		res["nodes"], res["fp"], res["shell"], res["topology"], res["created"], res["layout"], res["complete"])
	t.Logf("synthetic linear,1000: chromium's CPU time from navigation to the complete graph %v (not stretched by a loaded machine)", ChromiumCPU(profile)-cpu0)
	if png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot()); err == nil {
		if err := os.WriteFile(filepath.Join(t.ArtifactDir(), "synthetic-linear1000.png"), png, 0o644); err != nil {
			t.Error(err)
		}
	}
	if st, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.getElementById('status').textContent`)); err != nil || !strings.HasPrefix(st, "live") {
		t.Errorf("page status %q (%v), want live", st, err)
	}
	if res["nodes"] != 2000 {
		t.Errorf("%v nodes, want 2000", res["nodes"])
	}
}
