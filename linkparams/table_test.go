package linkparams

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// The table and the emulator agree on the schedule's columns: every
// column names a parameter and every schedulable parameter a column.
func TestTableScheduleColumns(t *testing.T) {
	cols := emulator.ScheduleParamColumns()
	sched := Schedulable()
	for _, c := range cols {
		if _, ok := sched[c]; !ok {
			t.Errorf("schedule column %s has no parameter in the table", c)
		}
	}
	for c := range sched {
		if !slices.Contains(cols, c) {
			t.Errorf("the table schedules column %s, which schedules do not have", c)
		}
	}
	if !slices.Equal(TCKeys, []string{"bw", "delay", "jitter", "loss", "max_queue_size"}) {
		t.Errorf("TCKeys %v", TCKeys)
	}
	for _, k := range []string{"duplicate", "corrupt", "slot", "ecn"} {
		if !IsKey(k) || !IsKey("a>b."+k) || !slices.Contains(IntfKeys(), k) || slices.Contains(TCKeys, k) {
			t.Errorf("%s: not an emulator key for every front end (Keys %v, IntfKeys %v)", k, Keys, IntfKeys())
		}
	}
}

// NetEm's parameters through every way a link is given its parameters
// here: a topology's params (per direction too), mn's --link emu, a live
// change in key=value and text form; --link tc refuses them, as Mininet's
// TCLink has none of them.
func TestNetemKeys(t *testing.T) {
	slot := emulator.SlotConfig{Enabled: true, Min: time.Millisecond, Max: 2 * time.Millisecond, Packets: 10}
	check := func(what string, c emulator.Config) {
		t.Helper()
		if c.Duplicate != 0.05 || c.Corrupt != 0.01 || c.Slot != slot || !c.ECN || c.Loss.Prob != 0.01 {
			t.Errorf("%s: %+v", what, c)
		}
	}
	p := topo.Params{"duplicate": "5", "corrupt": "1%", "slot": "1ms 2ms packets 10", "ecn": "true", "loss": "1"}
	ab, ba, err := Configs(p)
	if err != nil {
		t.Fatal(err)
	}
	check("params a>b", ab)
	check("params b>a", ba)
	ab, ba, err = Configs(topo.Params{"a>b.duplicate": "5", "loss": "1"})
	if err != nil || ab.Duplicate != 0.05 || ba.Duplicate != 0 {
		t.Errorf("a>b.duplicate: %v %v %v", ab.Duplicate, ba.Duplicate, err)
	}
	lp, err := ParseLinkSpec("emu,duplicate=5,corrupt=1,slot=1ms/2ms/packets/10,ecn=1,loss=1")
	if err != nil {
		t.Fatal(err)
	}
	ab, _, err = Configs(lp)
	if err != nil {
		t.Fatal(err)
	}
	check("--link emu", ab)
	if _, err := ParseLinkSpec("tc,duplicate=5"); err == nil || !strings.Contains(err.Error(), "unknown option \"duplicate\"") {
		t.Errorf("--link tc,duplicate=5: %v", err)
	}
	for _, change := range []string{"duplicate=5 corrupt=1 slot=1ms/2ms/packets/10 ecn=1 loss=1", "duplicate 5% corrupt 1% slot 1ms 2ms packets 10 loss 1% ecn"} {
		c := emulator.DefaultConfig()
		if err := Change(&c, change); err != nil {
			t.Fatalf("%s: %v", change, err)
		}
		check(change, c)
	}
	for _, bad := range []string{"duplicate=200", "corrupt=x", "slot=5ms/1ms", "ecn=maybe"} {
		c := emulator.DefaultConfig()
		k, _, _ := strings.Cut(bad, "=")
		if err := Change(&c, bad); err == nil || !strings.Contains(err.Error(), k+"=") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
