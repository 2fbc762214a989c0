package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestUICommandUsage: hymn ui without a live run to show, or with a run id
// that is not one, is a usage error (exit 2) that says why.
func TestUICommandUsage(t *testing.T) {
	for _, args := range [][]string{{"ui", "--run", "not-a-run"}, {"ui", "--run", "0123456789abcdef"}, {"ui", "extra"}} {
		var out, errb bytes.Buffer
		code := Execute(context.Background(), args, nil, &out, &errb)
		if code != 2 {
			t.Errorf("hymn %s: exit %d, want 2 (stderr %q)", strings.Join(args, " "), code, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("hymn %s printed %q", strings.Join(args, " "), out.String())
		}
	}
}
