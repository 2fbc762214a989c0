package dpdk

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	// pid 0x7ffffff0 is far above pid_max: that process cannot exist.
	for _, name := range []string{"hymn2147483632", FilePrefix(), "rte", "other123", "hymnx"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	n, err := removeStaleIn(dir)
	if err != nil || n != 1 {
		t.Fatalf("removed %d, %v; want 1", n, err)
	}
	for _, name := range []string{FilePrefix(), "rte", "other123", "hymnx"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s removed: %v", name, err)
		}
	}
	if FilePrefix() != "hymn"+strconv.Itoa(os.Getpid()) {
		t.Fatalf("FilePrefix = %s", FilePrefix())
	}
	if n, err := removeStaleIn(filepath.Join(dir, "nonexistent")); n != 0 || err != nil {
		t.Fatalf("missing run dir: %d, %v", n, err)
	}
}
