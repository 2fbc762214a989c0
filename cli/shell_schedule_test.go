package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/topo"
)

// The shell's schedule command: start one from a file, watch it, refuse a
// bad file with file:line, stop it.
func TestShellSchedule(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "steps.csv")
	if err := os.WriteFile(good, []byte("time,delay\n200ms,5ms\n400ms,1ms\nrepeat,600ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("time,delay\n2s,1ms\n1s,1ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startSession(t)
	s.expect(`mininet> `, 60*time.Second)
	if out := s.command("schedule"); !strings.Contains(out, "no schedules") {
		t.Errorf("schedule with none: %q", out)
	}
	if out := s.command("schedule h1 s1 " + bad); !strings.Contains(out, bad+":3: time 1s is not after") {
		t.Errorf("bad file: %q", out)
	}
	if out := s.command("schedule h1 s1 sideways " + good); !strings.Contains(out, "not a direction") {
		t.Errorf("bad direction: %q", out)
	}
	if out := s.command("schedule h1 h9 " + good); !strings.Contains(out, "not in network") {
		t.Errorf("unknown node: %q", out)
	}
	if out := s.command("schedule h1 s1 a>b " + good); !strings.Contains(out, "h1-s1: schedule "+good+" started (2 points over 600ms, repeating every 600ms)") {
		t.Errorf("start: %q", out)
	}
	time.Sleep(time.Second)
	out := s.command("schedule")
	if !strings.Contains(out, "h1->s1: "+good+" running") || strings.Contains(out, "s1->h1") {
		t.Errorf("progress: %q", out)
	}
	s.command("schedule stop")
	if out := s.command("schedule"); !strings.Contains(out, "no schedules") {
		t.Errorf("after stop: %q", out)
	}
	s.exit()
}

func TestLinkSpecScheduleAndTrace(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "s.csv")
	if err := os.WriteFile(good, []byte("time,delay\n1s,5ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := filepath.Join(dir, "t.trace")
	if err := os.WriteFile(tr, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	top, _ := topo.FromSpecString("single,2")
	if err := ApplyLinkSpec(top, "emu,schedule="+good+",a>b.trace="+tr); err != nil {
		t.Fatal(err)
	}
	if p := top.Links()[0].Params; p["schedule"] != good || p["a>b.trace"] != tr {
		t.Errorf("params %v", p)
	}
	bad := filepath.Join(dir, "bad.trace")
	if err := os.WriteFile(bad, []byte("3\n2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for spec, want := range map[string]string{
		"emu,schedule=" + filepath.Join(dir, "none.csv"): "none.csv: open",
		"emu,trace=" + bad:        bad + ":2: time before the previous line's",
		"emu,b>a.schedule=" + bad: bad + ":1: 1 values for 2 columns",
		"tc,schedule=" + good:     "unknown option \"schedule\"",
	} {
		top, _ := topo.FromSpecString("single,2")
		err := ApplyLinkSpec(top, spec)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a usage error with %q", spec, err, want)
		}
	}
}
