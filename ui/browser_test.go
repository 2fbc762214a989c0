package ui_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/ui"
)

// browser starts Debian's chromium headless (a fresh profile, nothing
// fetched from the network) and returns a context to drive it; it is
// killed when the test ends.
func browser(t *testing.T) context.Context {
	ctx, _ := browserProfile(t)
	return ctx
}

// browserProfile is browser, also returning chromium's profile directory
// (ui.ChromiumCPU finds its processes by it).
func browserProfile(t *testing.T) (context.Context, string) {
	t.Helper()
	testenv.Tools(t, "chromium")
	path, _ := exec.LookPath("chromium")
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1400, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return bctx, profile
}

// run runs chromedp actions with a timeout, failing the test on error.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	// Above every poll's own timeout: those say what was awaited.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := chromedp.Do(cctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	v, err := chromedp.Run(cctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// poll waits until a JavaScript expression is true in the page.
func poll(expr string, timeout time.Duration) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(timeout))
}

// shot saves a screenshot of the page as a test artefact (go test
// -artifacts -outputdir DIR keeps them).
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
	if dir := os.Getenv("HYMN_UI_SHOTS"); dir != "" { // docs/ screenshots
		if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
			t.Error(err)
		}
	}
}

func serve(t *testing.T, net *hymn.Network, opts ui.Options) *ui.Server {
	t.Helper()
	if opts.Interval == 0 {
		opts.Interval = 500 * time.Millisecond
	}
	s, err := ui.Serve(net, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // nothing to check at the end
	return s
}

// linkPackets reads, from the page, every link's packet count (both
// directions) by "node1-node2".
func linkPackets(t *testing.T, ctx context.Context) map[string]uint64 {
	t.Helper()
	m := eval[map[string]float64](t, ctx, `Object.fromEntries(hymnUI.topology.links.filter(l => l.id >= 0).map(l => {
		const s = hymnUI.samples.get(l.id); return [l.node1 + '-' + l.node2, s ? s.ab.packets + s.ba.packets : -1]; }))`)
	out := map[string]uint64{}
	for k, v := range m {
		out[k] = uint64(v)
	}
	return out
}

// waitEvents waits until the page has received n more stream events.
func waitEvents(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	start := eval[int](t, ctx, `hymnUI.events`)
	run(t, ctx, "waiting for updates", poll(fmt.Sprintf(`hymnUI.events >= %d`, start+n), 30*time.Second))
}

var rttRE = regexp.MustCompile(`time=([0-9.]+) ms`)

func rtts(out string) []float64 {
	var v []float64
	for _, m := range rttRE.FindAllStringSubmatch(out, -1) {
		f, _ := strconv.ParseFloat(m[1], 64)
		v = append(v, f)
	}
	sort.Float64s(v)
	return v
}

// TestBrowserLinear3 drives the page of a running linear,3 in chromium:
// the graph, live counters while h1 pings h3, a delay set from the page,
// a link set down from the page.
func TestBrowserLinear3(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "chromium", "ping")
	net := hymntest.Start(t, hymntest.Topo(t, "linear,3"), hymn.Options{})
	srv := serve(t, net, ui.Options{})
	ctx := browser(t)
	run(t, ctx, "loading the page", chromedp.Navigate(srv.URL()),
		poll(`window.hymnUI && hymnUI.ready && hymnUI.events > 0`, 30*time.Second))
	nodes, edges := eval[int](t, ctx, `hymnUI.cy.nodes().length`), eval[int](t, ctx, `hymnUI.cy.edges().length`)
	if nodes != 6 || edges != 5 {
		t.Fatalf("page shows %d nodes and %d links, want 6 and 5", nodes, edges)
	}
	shot(t, ctx, "linear3-rest.png")

	// h1 pings h3: the path's links count, h2's stays flat. The baseline
	// is taken once ARP is done (its broadcast reaches h2 too) and the
	// hosts' own IPv6 start-up (router solicitations, MLD reports in the
	// first seconds) has gone quiet on h2's link.
	// IPv6 off on the hosts first: h2's own start-up traffic (router
	// solicitations every 4 s, MLD reports) is not the switch's doing, and
	// one of those inside the window failed a CI run (3 packets on h2-s2).
	// What is left on h2's link is what the switch floods to it.
	for _, h := range []string{"h1", "h2", "h3"} {
		hymntest.Cmd(t, net, h, "sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1", 10*time.Second)
	}
	h3, _ := net.IP("h3")
	hymntest.Cmd(t, net, "h1", "ping -c 1 -W 2 "+h3.String(), 10*time.Second)
	for quiet, deadline := 0, time.Now().Add(30*time.Second); quiet < 3 && time.Now().Before(deadline); {
		b := linkPackets(t, ctx)["h2-s2"]
		waitEvents(t, ctx, 2)
		if linkPackets(t, ctx)["h2-s2"] == b {
			quiet++
		} else {
			quiet = 0
		}
	}
	h1, _ := net.Node("h1")
	pctx, stopPing := context.WithCancel(context.Background())
	defer stopPing()
	go func() { _, _ = h1.Exec(pctx, "ping", "-i", "0.1", "-w", "20", h3.String()) }() // stopped by cancel; the page judges it
	waitEvents(t, ctx, 2)
	before := linkPackets(t, ctx)
	waitEvents(t, ctx, 4)
	after := linkPackets(t, ctx)
	pathMin := int64(-1)
	for _, l := range []string{"h1-s1", "s2-s1", "s3-s2", "h3-s3"} {
		d := after[l] - before[l]
		if d < 10 {
			t.Errorf("link %s on the ping's path: %d packets in ~2 s on the page, want >= 10 (before %v, after %v)", l, d, before, after)
		}
		if pathMin < 0 || int64(d) < pathMin {
			pathMin = int64(d)
		}
	}
	// Flat: a switch that flooded the ping would put every request on
	// h2's link, half of what each path link carries (requests and
	// replies). Fewer than a quarter of that, and at most 2 when the path
	// is quiet, leaves room for the odd frame of the hosts' own (ARP
	// probes, which CI runs saw 3-4 of in a window) but not for the ping.
	if d := int64(after["h2-s2"] - before["h2-s2"]); d > max(2, pathMin/4) {
		t.Errorf("link h2-s2 off the path: %d packets on the page while the path's links carried at least %d, want flat (at most %d)", d, pathMin, max(2, pathMin/4))
	}
	active := eval[[]string](t, ctx, `hymnUI.cy.edges('.active').map(e => e.source().data('label') + '-' + e.target().data('label')).sort()`)
	// h2-s2 may show one stray packet of its own (checked above): the
	// path's four must all be drawn active.
	for _, l := range []string{"h1-s1", "h3-s3", "s2-s1", "s3-s2"} {
		if !slices.Contains(active, l) {
			t.Errorf("link %s not drawn active while h1 pings h3 (active: %v)", l, active)
		}
	}
	// The middle link's panel, with a few seconds of its rate chart.
	run(t, ctx, "selecting s2-s1", chromedp.Evaluate[chromedp.Void](`hymnUI.select('l3')`))
	waitEvents(t, ctx, 4)
	shot(t, ctx, "linear3-ping.png")
	stopPing()

	// delay 20ms on h1→s1, set on the page, shows in the next pings' RTT.
	run(t, ctx, "setting delay from the page",
		chromedp.Evaluate[chromedp.Void](`hymnUI.select('l0')`),
		chromedp.WaitVisible(chromedp.CSS(`#emu-apply`)),
		chromedp.SetValue(chromedp.CSS(`#emu-dir`), "a>b"),
		chromedp.SendKeys(chromedp.CSS(`#emu-params`), "delay 20ms"),
		chromedp.Click(chromedp.CSS(`#emu-apply`)),
		poll(`!!hymnUI.lastNote`, 60*time.Second))
	noteText := eval[string](t, ctx, `hymnUI.lastNote`)
	if !strings.HasPrefix(noteText, "emu h1 s1 a>b delay 20ms") {
		t.Fatalf("page after Apply: %q", noteText)
	}
	out, _ := h1.Cmd(context.Background(), "ping -c 5 -i 0.2 -W 2 "+h3.String())
	r := rtts(out)
	if len(r) < 3 {
		t.Fatalf("pings after the delay change: %s", out)
	}
	// Every reply crossed the 20 ms once; a 30 ms VM stall may delay one.
	if r[0] < 20 || r[len(r)/2] > 20+30 {
		t.Errorf("RTTs after delay 20ms on h1->s1: %v ms, want all >= 20 and the median < 50", r)
	}
	waitEvents(t, ctx, 2)
	shot(t, ctx, "linear3-delay.png")

	// The link set down on the page: the ping fails.
	run(t, ctx, "link down from the page",
		chromedp.Evaluate[chromedp.Void](`hymnUI.select('l0')`),
		chromedp.WaitVisible(chromedp.CSS(`#link-toggle`)),
		chromedp.Click(chromedp.CSS(`#link-toggle`)),
		poll(`hymnUI.lastNote === 'link h1 s1 down'`, 20*time.Second),
		poll(`hymnUI.samples.get(0).up === false`, 20*time.Second))
	if out, err := h1.Cmd(context.Background(), "ping -c 2 -W 1 "+h3.String()+" >/dev/null 2>&1; echo rc=$?"); err != nil || strings.TrimSpace(out) == "rc=0" {
		t.Errorf("ping over a link set down on the page: %q %v, want a failure", out, err)
	}
	shot(t, ctx, "linear3-down.png")
	run(t, ctx, "link up again", chromedp.Click(chromedp.CSS(`#link-toggle`)),
		poll(`hymnUI.samples.get(0).up === true`, 20*time.Second))
	hymntest.Cmd(t, net, "h1", "ping -c 1 -W 3 "+h3.String(), 10*time.Second)

	// The page's URL lost its token: the browser holds it as a cookie
	// the page's script cannot read.
	if loc := eval[string](t, ctx, `location.href`); strings.Contains(loc, "token") {
		t.Errorf("page's URL after load %q carries the token", loc)
	}
	if c := eval[string](t, ctx, `document.cookie`); c != "" {
		t.Errorf("the page's script reads cookies %q: the token's must be HttpOnly", c)
	}

	// The server refuses what has no token or comes from another origin.
	base := strings.SplitN(srv.URL(), "?", 2)[0]
	token := strings.SplitN(srv.URL(), "token=", 2)[1]
	for _, c := range []struct {
		what, url, header, origin string
		want                      int
	}{
		{"no token", base + "api/snapshot", "", "", http.StatusUnauthorized},
		{"wrong token", base + "api/snapshot", "00" + token[2:], "", http.StatusUnauthorized},
		{"token in an API URL", base + "api/snapshot?token=" + token, "", "", http.StatusUnauthorized},
		{"no token, page", base, "", "", http.StatusUnauthorized},
		{"foreign origin", base + "api/snapshot", token, "http://evil.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("GET", c.url, nil)
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		if c.header != "" {
			req.Header.Set("X-Hymn-Token", c.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close() // read nothing from it
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d, want %d", c.what, resp.StatusCode, c.want)
		}
	}
}

// TestBrowserTree lays out a 259-node tree (tree,3,6) in layers.
func TestBrowserTree(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "chromium")
	net := hymntest.Start(t, hymntest.Topo(t, "tree,depth=3,fanout=6"), hymn.Options{})
	srv := serve(t, net, ui.Options{})
	ctx := browser(t)
	start := time.Now()
	run(t, ctx, "loading the page", chromedp.Navigate(srv.URL()), poll(`window.hymnUI && hymnUI.ready`, 60*time.Second))
	t.Logf("tree,3,6: graph complete %v after navigating (page's own mark %.0f ms)", time.Since(start).Round(time.Millisecond), eval[float64](t, ctx, `hymnUI.marks['graph-complete']`))
	if n := eval[int](t, ctx, `hymnUI.cy.nodes().length`); n != 259 {
		t.Errorf("page shows %d nodes, want 259", n)
	}
	// Layers (rows or rings) from s1: each level farther from it.
	if ok := eval[bool](t, ctx, `(() => { const p = id => hymnUI.cy.getElementById('n:' + id).position(), r = p('s1');
		const d = id => Math.hypot(p(id).x - r.x, p(id).y - r.y);
		return d('s2') > 0 && d('s2') < d('s3') && d('s3') < d('h1'); })()`); !ok {
		t.Error("the tree is not laid out in layers from s1")
	}
	shot(t, ctx, "tree-259.png")
}

// TestBrowserMeasureHistogram runs measure from the page over an emulated
// link and shows the link's realised delay histogram while it runs; a
// read-only view of the same network offers no actions.
func TestBrowserMeasureHistogram(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "chromium")
	net := hymntest.Start(t, hymntest.Topo(t, "linear,2"), hymn.Options{})
	if err := net.SetLinkParams("s2", "s1", hymn.BothDirections, "delay 5ms 1ms distribution normal"); err != nil {
		t.Fatal(err)
	}
	srv := serve(t, net, ui.Options{})
	ctx := browser(t)
	run(t, ctx, "loading the page", chromedp.Navigate(srv.URL()), poll(`window.hymnUI && hymnUI.ready && hymnUI.events > 0`, 30*time.Second))
	id := eval[int](t, ctx, `hymnUI.topology.links.find(l => l.kind === 'emulated').id`)
	run(t, ctx, "measure from the page",
		chromedp.SetValue(chromedp.CSS(`#measure-from`), "h1"),
		chromedp.SetValue(chromedp.CSS(`#measure-to`), "h2"),
		chromedp.SetValue(chromedp.CSS(`#measure-rate`), "2000"),
		chromedp.SetValue(chromedp.CSS(`#measure-duration`), "4"),
		chromedp.Click(chromedp.CSS(`#measure-run`)),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`hymnUI.select('l%d')`, id)),
		poll(`+(document.getElementById('hist-chart')||{dataset:{}}).dataset.count > 2000`, 20*time.Second))
	run(t, ctx, "scrolling to the histogram", chromedp.Evaluate[chromedp.Void](`document.getElementById('hist-chart').scrollIntoView()`))
	shot(t, ctx, "histogram-measure.png")
	run(t, ctx, "measure done", poll(`!!document.getElementById('measure-plot')`, 30*time.Second))
	out := eval[string](t, ctx, `document.getElementById('measure-out').textContent`)
	if !strings.Contains(out, "one-way delay") {
		t.Errorf("measure result on the page: %q", out)
	}
	run(t, ctx, "scrolling to the plot", chromedp.Evaluate[chromedp.Void](`document.getElementById('measure-plot').scrollIntoView()`))
	shot(t, ctx, "measure-done.png")
	// The histogram's bins sit around 5 ms (the link's delay), both ways.
	p50 := eval[float64](t, ctx, fmt.Sprintf(`hymnUI.samples.get(%d).ab.emu.delay_us.p50`, id))
	if p50 < 4000 || p50 > 6000 {
		t.Errorf("page's realised delay p50 %.0f us, want about 5000", p50)
	}

	ro := serve(t, net, ui.Options{ReadOnly: true})
	run(t, ctx, "read-only page", chromedp.Navigate(ro.URL()), poll(`window.hymnUI && hymnUI.ready`, 30*time.Second),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`hymnUI.select('l%d')`, id)), chromedp.WaitVisible(chromedp.CSS(`#link-stats`)))
	if n := eval[int](t, ctx, `document.querySelectorAll('#link-toggle, #emu-apply, #capture-toggle').length`); n != 0 {
		t.Errorf("read-only page shows %d action buttons", n)
	}
	if eval[bool](t, ctx, `!document.getElementById('measure-run').disabled`) {
		t.Error("read-only page lets measure run")
	}
	base, token, _ := strings.Cut(ro.URL(), "?token=")
	req, _ := http.NewRequest("POST", base+"api/link/state", strings.NewReader(`{"node1":"h1","node2":"s1","up":false}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hymn-Token", token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // read nothing from it
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("action on the read-only view: %d, want 403", resp.StatusCode)
	}
}
