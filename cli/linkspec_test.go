package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/topo"
)

func TestApplyLinkSpec(t *testing.T) {
	top, err := topo.FromSpecString("single,2")
	if err != nil {
		t.Fatal(err)
	}
	top.Links()[0].Params = topo.Params{"delay": "5ms"}
	if err := ApplyLinkSpec(top, "tc,bw=10,delay=10ms,jitter=1ms,loss=1,max_queue_size=100"); err != nil {
		t.Fatal(err)
	}
	l0, l1 := top.Links()[0].Params, top.Links()[1].Params
	if l0["delay"] != "5ms" || l1["delay"] != "10ms" || l1["bw"] != "10" || l1["max_queue_size"] != "100" {
		t.Errorf("params %v %v (a link's own options win over --link)", l0, l1)
	}
	for _, spec := range []string{"default", "tc", "emu", "emu,delay=1ms,half_life=7ms,dist=gamma,reorder=1,a>b.loss=2,ge=1%/30%"} {
		top, _ := topo.FromSpecString("linear,2")
		if err := ApplyLinkSpec(top, spec); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

func TestApplyLinkSpecErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"tc,bw=0":            "bw",
		"tc,delay=-5ms":      "delay",
		"tc,frobnicate=1":    "frobnicate",
		"tc,loss=200":        "loss",
		"emu,half_life=-1ms": "half",
		"emu,b>a.what=1":     "what",
		"tc,10":              "10",
		"wire":               "wire",
		"tc,bw=fast":         "bw",
		"tc,half_life=1ms":   "half_life",
	} {
		top, _ := topo.FromSpecString("single,2")
		before := len(top.Links()[0].Params)
		err := ApplyLinkSpec(top, spec)
		if !errors.Is(err, ErrUsage) {
			t.Errorf("%s: err = %v, want a usage error", spec, err)
			continue
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %q does not name %s", spec, err, want)
		}
		if len(top.Links()[0].Params) != before {
			t.Errorf("%s: topology changed despite the error", spec)
		}
	}
}
