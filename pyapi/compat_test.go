package pyapi_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// TestMininetDetails runs the scripts of testdata/compat: details of
// Mininet that its own example tests (mininet/mininet's examples/test)
// check and scripts rely on, in our words: private directories, and
// switches' lo and controller targets as Mininet shows them. Each prints
// OK.
func TestMininetDetails(t *testing.T) {
	testenv.RootAndTools(t, "python3", "bash", "ip", "ping", "ovs-vsctl", "ovs-testcontroller", "unshare", "nsenter")
	scripts, err := filepath.Glob("testdata/compat/*.py")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, s := range scripts {
		name := strings.TrimSuffix(filepath.Base(s), ".py")
		t.Run(name, func(t *testing.T) {
			abs, err := filepath.Abs(s)
			if err != nil {
				t.Fatal(err)
			}
			out := runPython(t, t.TempDir(), 3*time.Minute, abs)
			if !strings.HasSuffix(strings.TrimSpace(out), "OK") {
				t.Fatalf("%s did not print OK:\n%s", name, out)
			}
		})
	}
}
