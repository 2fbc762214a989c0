package cli

import (
	"strings"
	"testing"
)

// A malformed HYMN_CPU_IDLE is a usage error before anything is built,
// whatever the command.
func TestBadCPUIdleEnv(t *testing.T) {
	t.Setenv("HYMN_CPU_IDLE", "sometimes")
	for _, args := range [][]string{{"--topo", "single,2", "--test", "pingall"}, {"emulate", "--help"}} {
		code, _, stderr := run(t, args...)
		if code != 2 || !strings.Contains(stderr, `HYMN_CPU_IDLE="sometimes"`) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("hymn %v: exit %d, stderr %q; want exit 2 and one line naming HYMN_CPU_IDLE", args, code, stderr)
		}
	}
	t.Setenv("HYMN_CPU_IDLE", "deep")
	if code, _, stderr := run(t, "--version"); code != 0 {
		t.Errorf("HYMN_CPU_IDLE=deep hymn --version: exit %d, %s", code, stderr)
	}
}
