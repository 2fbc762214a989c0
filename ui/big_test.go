//go:build uibig

package ui_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/ui"
)

// TestBrowserLinear1000 measures the page of linear,1000 (2000 nodes, 1999
// links): time to first paint and to the complete graph, and this
// process's CPU (the network's and the live view's) while the page gets
// updates at 1 Hz, against the same time without the page. A measurement,
// not part of the default suite (it builds 2000 namespaces and takes
// minutes): go test -tags uibig -run TestBrowserLinear1000 -v ./ui/
func TestBrowserLinear1000(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "chromium")
	net := hymntest.Start(t, hymntest.Topo(t, "linear,1000"), hymn.Options{Switch: hymn.SwitchAuto}) // the hymn command's default
	srv := serve(t, net, ui.Options{Interval: time.Second})
	ctx, profile := browserProfile(t)
	const window = 30 * time.Second
	// Let the network's own start-up traffic (IPv6 autoconfiguration) settle.
	time.Sleep(5 * time.Second)
	c0 := cpuTime()
	time.Sleep(window)
	idle := cpuTime() - c0
	start, chromeCPU := time.Now(), ui.ChromiumCPU(profile)
	run(t, ctx, "loading the page", chromedp.Navigate(srv.URL()), poll(`window.hymnUI && hymnUI.ready`, 4*time.Minute))
	wall := time.Since(start)
	chromeCPU = ui.ChromiumCPU(profile) - chromeCPU
	fp := eval[float64](t, ctx, `(performance.getEntriesByName('first-contentful-paint')[0] || performance.getEntriesByName('first-paint')[0] || {startTime: -1}).startTime`)
	complete := eval[float64](t, ctx, `hymnUI.marks['graph-complete']`)
	n, e := eval[int](t, ctx, `hymnUI.cy.nodes().length`), eval[int](t, ctx, `hymnUI.cy.edges().length`)
	if n != 2000 || e != 1999 {
		t.Errorf("page shows %d nodes and %d links, want 2000 and 1999", n, e)
	}
	shot(t, ctx, "linear1000.png")
	waitEvents(t, ctx, 2)
	ev0 := eval[int](t, ctx, `hymnUI.events`)
	c1 := cpuTime()
	time.Sleep(window)
	watched := cpuTime() - c1
	ev1 := eval[int](t, ctx, `hymnUI.events`)
	pct := func(d time.Duration) float64 { return 100 * d.Seconds() / window.Seconds() }
	t.Logf("linear,1000: the page's marks (ms after navigation start): %s", eval[string](t, ctx, `JSON.stringify(hymnUI.marks)`))
	t.Logf("linear,1000: first paint %.0f ms, graph complete %.0f ms after navigation start (%v until the test saw it; chromium's CPU meanwhile %v)", fp, complete, wall.Round(time.Millisecond), chromeCPU)
	t.Logf("linear,1000: CPU of this process over %v: %.2f%% of a core without the page, %.2f%% with it (%d updates), difference %.2f%%",
		window, pct(idle), pct(watched), ev1-ev0, pct(watched)-pct(idle))
}

// cpuTime is this process's user+system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // cannot fail for RUSAGE_SELF
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
