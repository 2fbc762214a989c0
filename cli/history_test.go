package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// TestHistoryRegularFile: the ordinary case still loads and appends.
func TestHistoryRegularFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".hymn_history")
	h := loadHistory(path)
	h.save("nodes")
	h.save("h1 ping -c1 h2")
	h = loadHistory(path)
	if h.Len() != 2 || h.At(0) != "h1 ping -c1 h2" || h.At(1) != "nodes" {
		t.Fatalf("history: %q", h.lines)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v", st.Mode().Perm())
	}
}

// TestHistoryRefusesLinksAndSpecialFiles: a symlink (dangling or not), a
// hard link, a FIFO and a directory are neither read nor written, and
// nothing blocks.
func TestHistoryRefusesLinksAndSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root-only\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	sym := filepath.Join(dir, "sym")
	if err := os.Symlink(secret, sym); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	created := filepath.Join(dir, "created-by-root")
	if err := os.Symlink(created, dangling); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard")
	if err := os.Link(secret, hard); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}

	for _, path := range []string{sym, dangling, hard, fifo, sub} {
		done := make(chan *history)
		go func() {
			h := loadHistory(path)
			h.save("injected")
			done <- h
		}()
		select {
		case h := <-done:
			if h.Len() != 0 {
				t.Errorf("%s: read %q", path, h.lines)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: history blocks", path)
		}
		if _, err := openHistory(path, os.O_RDONLY); err == nil {
			t.Errorf("%s: opened", path)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "root-only\n" {
		t.Errorf("the link target was written: %q", b)
	}
	if _, err := os.Lstat(created); err == nil {
		t.Error("a dangling symlink's target was created")
	}
}

// TestHistoryRefusesOthersFile: root does not use a history file another
// user owns (a home root does not control, e.g. under sudo).
func TestHistoryRefusesOthersFile(t *testing.T) {
	testenv.Root(t)
	path := filepath.Join(t.TempDir(), ".hymn_history")
	if err := os.WriteFile(path, []byte("echo hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 12345, 12345); err != nil {
		t.Fatal(err)
	}
	h := loadHistory(path)
	h.save("nodes")
	if h.Len() != 0 {
		t.Errorf("read %q", h.lines)
	}
	if b, _ := os.ReadFile(path); string(b) != "echo hi\n" {
		t.Errorf("written: %q", b)
	}
}

// TestHistoryHugeFile: only the tail of a huge file is read.
func TestHistoryHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".hymn_history")
	f, _ := os.Create(path)
	line := strings.Repeat("x", 100) + "\n"
	for range 40000 { // 4 MB
		if _, err := f.WriteString(line); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString("last\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	h := loadHistory(path)
	if h.Len() != historySize || h.At(0) != "last" {
		t.Errorf("%d lines, newest %q", h.Len(), h.At(0))
	}
}
