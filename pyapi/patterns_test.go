package pyapi_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// TestScriptPatterns runs the scripts of testdata/patterns: the ways
// other people's Mininet scripts use the API that once failed under hymn
// (hosts addressed only by their links, a computed queue size, a server
// and its client popen'ed back to back, a background capture, routers
// configured before the network exists). Each prints OK when what it
// checked holds.
func TestScriptPatterns(t *testing.T) {
	testenv.RootAndTools(t, "python3", "bash", "ip", "ping", "iperf", "tcpdump")
	scripts, err := filepath.Glob("testdata/patterns/*.py")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no pattern scripts: %v", err)
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
