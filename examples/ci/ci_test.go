// Package ci shows hymn in a CI pipeline: a Go test starts a network,
// serves HTTP from one host, fetches it from another across two switches,
// and asserts on what came back; the network is gone when the test ends.
package ci

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
)

func TestServiceAcrossTheNetwork(t *testing.T) {
	testenv.Root(t)
	top, err := topo.Linear(2, 1) // h1 - s1 - s2 - h2
	if err != nil {
		t.Fatal(err)
	}
	network, err := hymn.New(top, hymn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := network.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { network.Stop() })

	// The service: an HTTP server listening inside h1.
	h1, _ := network.NsNode("h1")
	ln, err := h1.Listen("tcp", ":8080")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s from h1", r.RemoteAddr)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	// The client: requests made from inside h2.
	h2, _ := network.NsNode("h2")
	client := &http.Client{Transport: &http.Transport{DialContext: h2.DialContext}, Timeout: 10 * time.Second}
	ip, _ := network.IP("h1")
	resp, err := client.Get("http://" + net.JoinHostPort(ip.String(), "8080") + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	h2ip, _ := network.IP("h2")
	if want := "hello " + h2ip.String() + ":"; resp.StatusCode != 200 || len(body) < len(want) || string(body[:len(want)]) != want {
		t.Fatalf("got %d %q, want 200 and a greeting to %s", resp.StatusCode, body, h2ip)
	}

	// The same service seen through a shell command on h2.
	out, err := h2.Cmd(ctx, "exec 3<>/dev/tcp/"+ip.String()+"/8080 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && head -1 <&3")
	if err != nil || len(out) < 12 || out[:12] != "HTTP/1.0 200" {
		t.Fatalf("bash /dev/tcp request from h2: %q, %v", out, err)
	}
}
