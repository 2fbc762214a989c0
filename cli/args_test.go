package cli

import (
	"strings"
	"testing"
)

// A wrong number of positional arguments is bad input: exit 2, one line.
func TestPositionalArgsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"run"},
		{"run", "a.yaml", "b.yaml"},
		{"version", "extra"},
		{"graph", "a", "b"},
		{"list", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, stderr := run(t, args...)
			if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || stderr == "" {
				t.Errorf("exit %d, stderr %q; want exit 2 and one line", code, stderr)
			}
		})
	}
}
