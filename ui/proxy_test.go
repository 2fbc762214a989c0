package ui_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/ui"
)

// TestProxy reaches a network through its control socket, as hymn ui in
// another process does: the snapshot through the gate, an action run by
// the network's side, refusals at the gate.
func TestProxy(t *testing.T) {
	testenv.Root(t)
	net := hymntest.Start(t, hymntest.Topo(t, "single,2"), hymn.Options{})
	ctl, err := ui.ServeControl(net, ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ctl.Close() }) // before the network stops
	if run, err := ui.FindRun(net.RunID()); err != nil || run != net.RunID() {
		t.Fatalf("FindRun(%s) = %q, %v", net.RunID(), run, err)
	}
	p, err := ui.Proxy(net.RunID(), ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() }) // nothing to check at the end
	base, token, _ := strings.Cut(p.URL(), "?token=")
	// A script sends the token in a header (the page trades it for a
	// cookie).
	get := func(url string) (*http.Response, error) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("X-Hymn-Token", token)
		return http.DefaultClient.Do(req)
	}
	resp, err := get(base + "api/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	var snap ui.Snapshot
	err = json.NewDecoder(resp.Body).Decode(&snap)
	_ = resp.Body.Close() // read
	if err != nil || resp.StatusCode != 200 || len(snap.Topology.Nodes) != 3 || len(snap.Topology.Links) != 2 || snap.Topology.Run != net.RunID() {
		t.Fatalf("snapshot through the proxy: %d %v %+v", resp.StatusCode, err, snap.Topology)
	}
	resp, err = http.Get(base + "api/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the status matters
	if resp.StatusCode != 401 {
		t.Errorf("snapshot through the proxy without the token: %d, want 401", resp.StatusCode)
	}
	req, _ := http.NewRequest("POST", base+"api/link/emu", strings.NewReader(`{"node1":"h1","node2":"s1","dir":"a>b","params":"delay 7ms"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hymn-Token", token)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // judged by the network's state below
	st, err := net.LinkStats("h1", "s1")
	if resp.StatusCode != 200 || err != nil || !strings.HasPrefix(st.ForwardConfig.String(), "delay 7ms") {
		t.Errorf("emu through the proxy: %d, link now %v (%v)", resp.StatusCode, st.ForwardConfig, err)
	}

	// A capture started and stopped through the API, its pcapng downloaded.
	post := func(path, body string) map[string]any {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hymn-Token", token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }() // read below
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %d %v %v", path, resp.StatusCode, v, err)
		}
		return v
	}
	c := post("api/capture/start", `{"node1":"h1","node2":"s1","dir":"both"}`)
	h2, _ := net.IP("h2")
	hymntest.Cmd(t, net, "h1", "ping -c 2 -W 2 "+h2.String(), 10*time.Second)
	id := int(c["id"].(float64))
	post("api/capture/stop", fmt.Sprintf(`{"id":%d}`, id))
	resp, err = get(fmt.Sprintf("%sapi/capture/file?id=%d&file=0", base, id))
	if err != nil {
		t.Fatal(err)
	}
	pcap, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close() // read
	// A pcapng file starts with a section header block, type 0x0A0D0D0A.
	if err != nil || resp.StatusCode != 200 || len(pcap) < 100 || !bytes.HasPrefix(pcap, []byte{0x0a, 0x0d, 0x0d, 0x0a}) {
		t.Errorf("capture download: %d, %d bytes, %v", resp.StatusCode, len(pcap), err)
	}
	resp, err = get(fmt.Sprintf("%sapi/capture/file?id=%d&file=7", base, id))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // only the status matters
	if resp.StatusCode != 404 {
		t.Errorf("a file the capture does not have: %d, want 404", resp.StatusCode)
	}
}
