// Package ci shows hymn in a CI pipeline: Go tests start a network with
// hymntest (which skips without root, registers the teardown before
// building and checks at the end that nothing of the run is left), check
// reachability, serve HTTP from one host, fetch it from another across two
// switches, and assert on what came back.
package ci

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
)

// The minimal reachability test: every host pings every other one.
func TestReachable(t *testing.T) {
	net := hymntest.Start(t, hymntest.Topo(t, "linear,3"), hymn.Options{})
	hymntest.Reachable(t, net)
}

// A link that loses everything one way and nothing the other: h1 cannot
// reach h2 (the echo request is lost), whatever the ping's direction.
func TestOneWayLoss(t *testing.T) {
	top := topo.New()
	top.AddHost("h1")
	top.AddHost("h2")
	top.AddLink("h1", "h2", linkparams.Params(
		linkparams.Delay(2*time.Millisecond),
		linkparams.For(emulator.AtoB, linkparams.Loss(1)),
	))
	net := hymntest.Start(t, top, hymn.Options{})
	hymntest.Unreachable(t, net, "h1", "h2")
	hymntest.Unreachable(t, net, "h2", "h1")
}

func TestServiceAcrossTheNetwork(t *testing.T) {
	top, err := topo.Linear(2, 1) // h1 - s1 - s2 - h2
	if err != nil {
		t.Fatal(err)
	}
	network := hymntest.Start(t, top, hymn.Options{})

	// The service: an HTTP server listening inside h1.
	h1, _ := network.NsNode("h1")
	ln, err := h1.Listen("tcp", ":8080")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "hello %s from h1", r.RemoteAddr)
	})}
	// Serve returns http.ErrServerClosed once the cleanup closes it; if it
	// failed before, the request below fails.
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Error(err)
		}
	})

	// The client: requests made from inside h2.
	h2, _ := network.NsNode("h2")
	client := &http.Client{Transport: &http.Transport{DialContext: h2.DialContext}, Timeout: 10 * time.Second}
	ip, _ := network.IP("h1")
	resp, err := client.Get("http://" + net.JoinHostPort(ip.String(), "8080") + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // read to the end already
	h2ip, _ := network.IP("h2")
	if want := "hello " + h2ip.String() + ":"; resp.StatusCode != 200 || !strings.HasPrefix(string(body), want) {
		t.Fatalf("got %d %q, want 200 and a greeting to %s", resp.StatusCode, body, h2ip)
	}

	// The same service seen through a shell command on h2.
	out := hymntest.Cmd(t, network, "h2", "exec 3<>/dev/tcp/"+ip.String()+"/8080 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3", 10*time.Second)
	if !strings.HasPrefix(out, "HTTP/1.0 200") {
		t.Fatalf("bash /dev/tcp request from h2: %q", out)
	}
}
