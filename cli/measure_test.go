package cli

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

// Every measure, list, --json and --capture option rejects bad input with
// exit 2 and one line, before anything is built (so no root is needed).
func TestMeasureBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"measure", "--rate", "fast"},
		{"measure", "--rate", "0"},
		{"measure", "--rate", "50k,"},
		{"measure", "--rate", "1e12"},
		{"measure", "--rate", "1M-1k/1k"},
		{"measure", "--frame", "63"},
		{"measure", "--frame", "9000"},
		{"measure", "--duration", "1ms"},
		{"measure", "--duration", "2h"},
		{"measure", "--warmup", "-1s"},
		{"measure", "--drain", "0s"},
		{"measure", "--pattern", "sine"},
		{"measure", "--burst", "0"},
		{"measure", "--flows", "0"},
		{"measure", "--port", "70000"},
		{"measure", "--json", "--csv"},
		{"measure", "--loss-tolerance", "0.1"},
		{"measure", "--zero-loss", "--loss-tolerance", "2"},
		{"measure", "--zero-loss", "--resolution", "1"},
		{"measure", "--zero-loss", "--trial", "1ms"},
		{"measure", "--zero-loss", "--zero-loss-max", "x"},
		{"measure", "--series-rate", "10k"},
		{"measure", "--series", "a.svg", "--series-rate", "x"},
		{"measure", "--plot", "a.png"},
		{"measure", "--series", "a.txt"},
		{"measure", "--test", "pingall"},
		{"measure", "extra"},
		{"measure", "--no-such-flag"},
		{"list", "extra"},
		{"list", "--jsn"},
		{"--json"},
		{"--test", "pingall", "--capture", "h1"},
		{"--test", "pingall", "--capture", "h1-s1,dir=up"},
		{"--test", "pingall", "--capture", "h1-s1,limit=0"},
		{"--test", "pingall", "--capture", "h1-s1,bogus=1"},
		{"--topo", "single,2", "--test", "pingall", "--capture", "h1-h2"},
		{"measure", "--topo", "single,2", "--from", "h9"},
		{"measure", "--topo", "single,2", "--to", "h9"},
		{"measure", "--topo", "single,2", "--from", "h1", "--to", "h1"},
	} {
		code, stdout, stderr := run(t, args...)
		if code != 2 || stdout != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "hymn: ") {
			t.Errorf("hymn %s: exit %d, stdout %q, stderr %q; want exit 2 and one line", strings.Join(args, " "), code, stdout, stderr)
		}
	}
}

// The command, shortened: one result per rate with the
// percentiles, loss and reordering as JSON on stdout, Mininet's lines on
// stderr; --zero-loss adds the search; --plot writes well-formed SVG.
func TestMeasureCommand(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	plot := filepath.Join(dir, "hdr.svg")
	series := filepath.Join(dir, "delay.svg")
	code, stdout, stderr := run(t, "measure", "--topo", "linear,3", "--from", "h1", "--to", "h3", "--rate", "20k,50k",
		"--frame", "64", "--duration", "500ms", "--json", "--zero-loss", "--zero-loss-max", "40k", "--trial", "300ms",
		"--resolution", "0.2", "--plot", plot, "--series", series, "--hgrm", filepath.Join(dir, "h"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "*** Creating network") || !strings.Contains(stderr, "p99.9999") || !strings.Contains(stderr, "*** Zero-loss rate h1 -> h3") {
		t.Errorf("stderr:\n%s", stderr)
	}
	var rep struct {
		Results  []map[string]any `json:"results"`
		ZeroLoss *struct {
			Rate   float64 `json:"rate_pps"`
			Trials []any   `json:"trials"`
		} `json:"zero_loss"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if len(rep.Results) != 2 {
		t.Fatalf("%d results, want 2", len(rep.Results))
	}
	for _, r := range rep.Results {
		lat, _ := r["latency_us"].(map[string]any)
		for _, k := range []string{"p50", "p90", "p99", "p99.9", "p99.99", "p99.999", "p99.9999", "min", "mean", "max"} {
			if _, ok := lat[k]; !ok {
				t.Errorf("result lacks latency %s: %v", k, r)
			}
		}
		for _, k := range []string{"loss", "reordered", "duplicates", "sent", "received", "sent_pps"} {
			if _, ok := r[k]; !ok {
				t.Errorf("result lacks %s", k)
			}
		}
	}
	if rep.ZeroLoss == nil || len(rep.ZeroLoss.Trials) == 0 {
		t.Errorf("no zero-loss search in %s", stdout)
	}
	for _, f := range []string{plot, series} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(data, new(struct{})); err != nil || !strings.Contains(string(data), "<polyline") && !strings.Contains(string(data), "<path") {
			t.Errorf("%s is not a drawing: %v", f, err)
		}
	}
	hg, _ := filepath.Glob(filepath.Join(dir, "h-*.hgrm"))
	if len(hg) != 3 {
		t.Errorf(".hgrm files %v, want one per rate and the zero-loss rate", hg)
	}
	// The SVG must render, not only parse: librsvg rasterises it.
	testenv.Tools(t, "rsvg-convert")
	if out, err := exec.Command("rsvg-convert", "-o", filepath.Join(dir, "hdr.png"), plot).CombinedOutput(); err != nil {
		t.Errorf("rsvg-convert: %v\n%s", err, out)
	}
}

// --test pingall --json prints the matrix with RTTs; Mininet's lines stay
// on stderr. hymn list --json shows nothing of this run after it ended
// and is valid JSON.
func TestTestJSONAndList(t *testing.T) {
	testenv.Root(t)
	code, stdout, stderr := run(t, "--topo", "single,3", "--test", "pingall", "--json")
	if code != 0 || !strings.Contains(stderr, "*** Results: 0% dropped (6/6 received)") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	var out struct {
		Run   string `json:"run"`
		Tests []struct {
			Test    string   `json:"test"`
			Dropped *float64 `json:"dropped_percent"`
			Pings   []struct {
				Src, Dst string
				RTT      *struct{ Avg float64 } `json:"rtt_ms"`
			} `json:"pings"`
		} `json:"tests"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if len(out.Tests) != 1 || out.Tests[0].Test != "pingall" || len(out.Tests[0].Pings) != 6 || *out.Tests[0].Dropped != 0 {
		t.Fatalf("%s", stdout)
	}
	for _, p := range out.Tests[0].Pings {
		if p.RTT == nil || p.RTT.Avg <= 0 {
			t.Errorf("ping %s->%s without RTT", p.Src, p.Dst)
		}
	}
	code, stdout, _ = run(t, "list", "--json")
	var list struct {
		Runs []struct {
			Run string `json:"run"`
		} `json:"runs"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &list) != nil {
		t.Fatalf("list --json: exit %d\n%s", code, stdout)
	}
	for _, r := range list.Runs {
		if r.Run == out.Run {
			t.Errorf("finished run %s still listed", r.Run)
		}
	}
}

func TestTopologyOf(t *testing.T) {
	for in, want := range map[string]string{
		"--topo linear,7 --test pingall": "linear,7",
		"--topo=tree,2,2":                "tree,2,2",
		"run examples/wan.yaml":          "examples/wan.yaml",
		"--custom t.py --topo mytopo":    "t.py:mytopo",
		"":                               "minimal",
		"measure --topo single,3":        "single,3",
	} {
		if got := topologyOf(strings.Fields(in)); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

// The shell's capture and measure commands, fed from a file as Mininet's
// CLI reads a script.
func TestShellCaptureAndMeasure(t *testing.T) {
	testenv.RootAndTools(t, "tcpdump", "ping")
	dir := t.TempDir()
	pc := filepath.Join(dir, "h1s1.pcapng")
	script := filepath.Join(dir, "in")
	if err := os.WriteFile(script, []byte("capture h1 s1 a>b "+pc+"\ncapture\nh1 ping -c3 h2\ncapture stop\ncapture stop\n"+
		"measure h1 h2 --rate 5k --duration 300ms --json\nmeasure h1 --rate 5k\nmeasure h1 h2 --rate x\ncapture h1 h2\nexit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(script)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = in.Close() }() // read-only
	var out, errOut strings.Builder
	code := Execute(t.Context(), []string{"--topo", "single,2"}, in, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut.String())
	}
	log := errOut.String()
	for _, want := range []string{"*** Capturing h1-s1 (a>b) to " + pc, "h1-s1 -> " + pc, "*** Wrote " + pc, "no such capture running",
		"p99.9999", "usage: measure", "measure: --rate", "capture: "} {
		if !strings.Contains(log, want) {
			t.Errorf("shell output lacks %q:\n%s", want, log)
		}
	}
	i := strings.Index(out.String(), "{")
	j := strings.LastIndex(out.String(), "}")
	var rep struct {
		Results []any `json:"results"`
	}
	if i < 0 || j < i || json.Unmarshal([]byte(out.String()[i:j+1]), &rep) != nil || len(rep.Results) != 1 {
		t.Errorf("measure --json in the shell:\n%s", out.String())
	}
	dump, err := exec.Command("tcpdump", "-nr", pc).CombinedOutput()
	if err != nil || strings.Count(string(dump), "ICMP echo request") != 3 || strings.Contains(string(dump), "echo reply") {
		t.Errorf("a>b capture of 3 pings: %v\n%s", err, dump)
	}
}

// --capture at start: a pcapng of the link that tcpdump reads, written
// by the time hymn exits.
func TestCaptureFlag(t *testing.T) {
	testenv.RootAndTools(t, "tcpdump")
	f := filepath.Join(t.TempDir(), "h1s1.pcapng")
	code, _, stderr := run(t, "--topo", "single,2", "--capture", "h1-s1,dir=both,file="+f+",limit=1M", "--test", "pingall")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	out, err := exec.Command("tcpdump", "-nr", f, "icmp").CombinedOutput()
	if err != nil || strings.Count(string(out), "ICMP echo request") != 2 || strings.Count(string(out), "ICMP echo reply") != 2 {
		t.Errorf("tcpdump -r: %v\n%s", err, out)
	}
}
