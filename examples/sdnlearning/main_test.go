package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/hymntest"
)

func TestLearningSwitchFlows(t *testing.T) {
	hymntest.RequireRoot(t)
	hymntest.RequireTools(t, "ovs-vswitchd", "ovsdb-server", "ovs-testcontroller", "ovs-ofctl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	learned, err := run(ctx, "linear,3", &out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "*** Results: 0% dropped (6/6 received)") {
		t.Errorf("pingall:\n%s", out.String())
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		if learned[s] == 0 || !strings.Contains(out.String(), "*** "+s+" ---") {
			t.Errorf("switch %s: %d learned flows\n%s", s, learned[s], out.String())
		}
	}
	if !strings.Contains(out.String(), "actions=output:") {
		t.Errorf("no forwarding flow in the dump:\n%s", out.String())
	}
}
