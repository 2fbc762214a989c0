package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/ui"
)

// The live view of a network split over two local workers (cluster run
// --ui): every node with its worker, the cut link drawn as a VXLAN tunnel
// whose counters follow a ping across it, an emulator set on a link of one
// worker through the page's API delaying the next ping, actions across
// workers refused, node details from the node's worker, the token gate;
// nothing left after.
func TestClusterLiveView(t *testing.T) {
	testenv.RootAndTools(t, "ip", "ping")
	bin := sharedBinary(t)
	cmd := exec.Command(bin, "cluster", "run", "--topo", "linear,4", "--cluster", "local:2", "--test", "cli", "--ui")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The shell's and the workers' output, line by line; the URL first.
	var mu sync.Mutex
	var out bytes.Buffer
	urlc := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			out.WriteString(line + "\n")
			mu.Unlock()
			if u, ok := strings.CutPrefix(line, "*** Live view: "); ok {
				urlc <- u
			}
		}
	}()
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = stdin.Close()
			_ = cmd.Wait()
		}
	})
	var pageURL string
	select {
	case pageURL = <-urlc:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no live view URL:\n%s", out.String())
	}
	base, token, _ := strings.Cut(pageURL, "/?token=")
	get := func(path string, v any) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("X-Hymn-Token", token)
		return do(t, req, v)
	}
	post := func(path, body string, v any) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("X-Hymn-Token", token)
		req.Header.Set("Content-Type", "application/json")
		return do(t, req, v)
	}
	shell := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// waitOutput waits for a line matching re after the output's first
	// `from` bytes.
	waitOutput := func(from int, re *regexp.Regexp) []string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			mu.Lock()
			m := re.FindStringSubmatch(out.String()[from:])
			mu.Unlock()
			if m != nil {
				return m
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("no %v in the output:\n%s", re, out.String())
		return nil
	}
	outLen := func() int { mu.Lock(); defer mu.Unlock(); return out.Len() }

	var topo ui.Topology
	if code := get("/api/topology", &topo); code != http.StatusOK {
		t.Fatalf("topology: %d", code)
	}
	workers := map[string]int{}
	for _, n := range topo.Nodes {
		if n.Worker == nil || *n.Worker < 0 || *n.Worker > 1 {
			t.Errorf("node %s: worker %v", n.Name, n.Worker)
			continue
		}
		workers[n.Name] = *n.Worker
	}
	if len(topo.Nodes) != 8 {
		t.Errorf("%d nodes, want 8: %+v", len(topo.Nodes), topo.Nodes)
	}
	var cut *ui.LinkView
	ids := map[string]int{}
	for i, l := range topo.Links {
		ids[l.Node1+"-"+l.Node2] = l.ID
		if l.Kind == "cut" {
			if cut != nil {
				t.Errorf("a second cut link %+v", l)
			}
			cut = &topo.Links[i]
		}
	}
	if len(topo.Links) != 7 || cut == nil {
		t.Fatalf("links %+v: want 7, one of them cut", topo.Links)
	}
	if len(cut.Workers) != 2 || cut.Workers[0] == cut.Workers[1] || cut.VNI <= 0 ||
		workers[cut.Node1] != cut.Workers[0] || workers[cut.Node2] != cut.Workers[1] {
		t.Errorf("cut link %+v, nodes' workers %v", cut, workers)
	}
	if workers["h1"] == workers["h4"] || workers["h1"] != workers["s1"] {
		t.Fatalf("split %v: the test wants h1 and s1 together, h4 on the other worker", workers)
	}

	// Counters: sampling starts with the snapshot; then 30 pings cross
	// the cut link each way.
	var snap ui.Snapshot
	if code := get("/api/snapshot", &snap); code != http.StatusOK {
		t.Fatalf("snapshot: %d", code)
	}
	before := linkSample(snap.Stats, cut.ID)
	from := outLen()
	shell("h1 ping -c 30 -i 0.05 h4")
	waitOutput(from, regexp.MustCompile(`30 packets transmitted, 30 received`))
	var after ui.Sample
	deadline := time.Now().Add(10 * time.Second)
	for {
		get("/api/stats", &after)
		// A worker's part is sampled every interval, the tunnels when
		// asked: the two may be a second apart.
		a, h1 := linkSample(&after, cut.ID), linkSample(&after, ids["h1-s1"])
		if a.AB.Packets-before.AB.Packets >= 30 && a.BA.Packets-before.BA.Packets >= 30 && h1.AB.Packets >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cut link %s-%s counted %d/%d packets across (before %d/%d), want 30 each way; h1-s1 %d from h1", cut.Node1, cut.Node2,
				a.AB.Packets, a.BA.Packets, before.AB.Packets, before.BA.Packets, h1.AB.Packets)
		}
		time.Sleep(300 * time.Millisecond)
	}

	// An emulator on a link inside worker 0, from the page's API: the
	// next RTT is at least 20 ms; its histogram comes from the worker.
	if code := post("/api/link/emu", `{"node1":"h1","node2":"s1","dir":"a>b","params":"delay 20ms"}`, nil); code != http.StatusOK {
		t.Fatalf("emu h1 s1: %d", code)
	}
	from = outLen()
	shell("h1 ping -c 3 -i 0.2 h4")
	m := waitOutput(from, regexp.MustCompile(`rtt min/avg/max/mdev = ([0-9.]+)/`))
	if rtt, _ := strconv.ParseFloat(m[1], 64); rtt < 20 {
		t.Errorf("min RTT %v ms after delay 20ms on h1>s1", rtt)
	}
	var hist map[string]any
	if code := get("/api/histogram?link="+strconv.Itoa(ids["h1-s1"]), &hist); code != http.StatusOK || hist["link"] != strconv.Itoa(ids["h1-s1"]) {
		t.Errorf("histogram of h1-s1: %d %v", code, hist)
	}
	if code := get("/api/topology", &topo); code != http.StatusOK {
		t.Fatal(code)
	}
	for _, l := range topo.Links {
		if l.Node1 == "h1" && l.Kind != "emulated" {
			t.Errorf("h1-s1 is %q after the emulator went in", l.Kind)
		}
	}

	// Across workers: refused with the reason; nothing changed.
	var refusal map[string]string
	body := `{"node1":"` + cut.Node1 + `","node2":"` + cut.Node2 + `","up":false}`
	if code := post("/api/link/state", body, &refusal); code != http.StatusBadRequest || !strings.Contains(refusal["error"], "worker") {
		t.Errorf("link down on the cut link: %d %v", code, refusal)
	}
	if code := post("/api/measure", `{"from":"h1","to":"h4"}`, &refusal); code != http.StatusBadRequest {
		t.Errorf("measure across workers: %d %v", code, refusal)
	}
	if code := post("/api/link/state", `{"node1":"h1","node2":"h9","up":false}`, nil); code != http.StatusBadRequest {
		t.Errorf("an unknown node: %d", code)
	}
	var node map[string]any
	if code := get("/api/node?name=h4", &node); code != http.StatusOK || node["worker"] != float64(workers["h4"]) || node["live"] == nil {
		t.Errorf("node h4: %d %v", code, node)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/api/topology", nil)
	if code := do(t, req, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}

	shell("exit")
	_ = stdin.Close()
	err = cmd.Wait()
	exited = true
	<-done
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"*** ui: emu h1 s1 a>b delay 20ms (worker 0)", "*** Stopping 2 workers"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output lacks %q:\n%s", want, out.String())
		}
	}
	o, _ := exec.Command("ip", "netns", "list").Output()
	for _, run := range strings.Split(topo.Run, "+") {
		if run == "" || strings.Contains(string(o), run) {
			t.Errorf("run %q: namespaces left: %s", run, o)
		}
	}
}

func do(t *testing.T, req *http.Request, v any) int {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && len(b) > 0 && json.Unmarshal(b, v) != nil && resp.StatusCode == http.StatusOK {
		t.Fatalf("%s: %s", req.URL.Path, b)
	}
	return resp.StatusCode
}

func linkSample(s *ui.Sample, id int) ui.LinkSample {
	for _, l := range s.Links {
		if l.ID == id {
			return l
		}
	}
	return ui.LinkSample{}
}
