package topo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
)

const scheduleHead = `nodes: [h1, h2]
links:
  - endpoints: [h1, h2]
`

func loadSched(t *testing.T, dir, body string) (*Topo, error) {
	t.Helper()
	path := filepath.Join(dir, "topo.yaml")
	if err := os.WriteFile(path, []byte(scheduleHead+body), 0o644); err != nil {
		t.Fatal(err)
	}
	tp, _, err := LoadFile(path)
	return tp, err
}

func TestYAMLScheduleInline(t *testing.T) {
	dir := t.TempDir()
	tp, err := loadSched(t, dir, `    params: {delay: 10ms}
    schedule:
      repeat: 30s
      points:
        - {at: 0s, params: {delay: 20ms}}
        - {at: 15s, params: {delay: 40ms, loss: 1%}, ramp: true}
`)
	if err != nil {
		t.Fatal(err)
	}
	v := tp.Links()[0].Params["schedule"]
	s, err := emulator.DecodeSchedule("x", v)
	if err != nil {
		t.Fatalf("%q: %v", v, err)
	}
	if len(s.Points) != 2 || s.Repeat != 30*time.Second || !s.Points[1].Ramp || s.Points[1].Params.Delay != 40*time.Millisecond || s.Points[1].Params.Loss != 0.01 {
		t.Fatalf("%+v", s)
	}
}

func TestYAMLScheduleFilesAndDirections(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "up.csv"), []byte("time,delay\n0,5\n1s,6\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cell.trace"), []byte("1\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tp, err := loadSched(t, dir, `    a>b: {trace: cell.trace}
    schedule:
      a>b: up.csv
      b>a: [{at: 2s, params: {delay: 30ms}}]
`)
	if err != nil {
		t.Fatal(err)
	}
	p := tp.Links()[0].Params
	if p["a>b.schedule"] != filepath.Join(dir, "up.csv") || p["a>b.trace"] != filepath.Join(dir, "cell.trace") || !strings.HasPrefix(p["b>a.schedule"], "time,") {
		t.Fatalf("%v", p)
	}
}

func TestYAMLScheduleErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.csv"), []byte("time,delay\n2s,1ms\n1s,2ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.trace"), []byte("1\n-3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "empty.trace"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, body, want string }{
		{"unsorted", "    schedule:\n      - {at: 2s, params: {delay: 1ms}}\n      - {at: 1s, params: {delay: 2ms}}\n",
			"topo.yaml:6:9: links[0].schedule: time 1s is not after"},
		{"negative", "    schedule:\n      - {at: 1s, params: {delay: -1ms}}\n",
			"topo.yaml:5:9: links[0].schedule: delay: negative"},
		{"unknown param", "    schedule:\n      - {at: 1s, params: {bandwidth: 1}}\n",
			"topo.yaml:5:27: links[0].schedule[0].params.bandwidth: unknown key"},
		{"unknown key", "    schedule: {points: [], period: 3s}\n", "links[0].schedule.period: unknown key"},
		{"no at", "    schedule: [{params: {delay: 1ms}}]\n", "topo.yaml:4:16: links[0].schedule[0]: a point needs at:"},
		{"empty", "    schedule: []\n", "empty schedule"},
		{"file", "    schedule: bad.csv\n", "topo.yaml:4:15: links[0].schedule: " + filepath.Join(dir, "bad.csv") + ":3: time 1s is not after"},
		{"missing file", "    schedule: nope.csv\n", "nope.csv: open"},
		{"bad trace", "    params: {trace: bad.trace}\n", filepath.Join(dir, "bad.trace") + ":2: negative time"},
		{"empty trace", "    b>a: {trace: empty.trace}\n", "empty trace"},
		{"repeat", "    schedule: {repeat: 1s, points: [{at: 2s, params: {delay: 1ms}}]}\n", "repeat 1s must be longer"},
		{"comma", "    schedule: [{at: '1s,2', params: {delay: 1ms}}]\n", "cannot contain ','"},
		{"mixed", "    schedule: {a>b: x.csv, repeat: 1s}\n", "give either a>b:/b>a:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadSched(t, dir, c.body)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want %q", err, c.want)
			}
		})
	}
}
