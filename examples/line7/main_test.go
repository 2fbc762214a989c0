package main

import (
	"context"
	"strings"
	"testing"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/mnlog"
)

func TestLine7ReachesEveryHost(t *testing.T) {
	hymntest.RequireRoot(t)
	var out strings.Builder
	if err := run(context.Background(), "pingall", hymn.Options{Log: mnlog.New(&out, mnlog.Output)}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "*** Results: 0% dropped (42/42 received)") {
		t.Errorf("pingall over the line:\n%s", out.String())
	}
}
