package cli

import (
	"os/exec"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

// TestMininetCompat runs tests/compat/compat.sh: the same mininet> script
// through Mininet 2.3 and through hymn, with identical lines expected.
func TestMininetCompat(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "mn", "brctl")
	for _, topo := range []string{"minimal", "linear,3"} {
		cmd := exec.Command("../tests/compat/compat.sh", topo)
		cmd.Env = append(cmd.Environ(), "HYMN="+sharedBinary(t))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("compat.sh %s: %v\n%s", topo, err, out)
		}
	}
}
