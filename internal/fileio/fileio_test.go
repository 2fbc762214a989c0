package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestReadLimited(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.WriteFile(small, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadLimited(small, 5); err != nil || string(data) != "12345" {
		t.Errorf("at the limit: %q, %v", data, err)
	}
	if _, err := ReadLimited(small, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("above the limit: %v", err)
	}
	if _, err := ReadLimited("/dev/zero", 1<<20); !errors.Is(err, ErrNotRegular) {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadLimited(dir, 10); !errors.Is(err, syscall.EISDIR) || !errors.Is(err, ErrNotRegular) {
		t.Errorf("a directory: %v", err)
	}
	if _, err := ReadLimited(filepath.Join(dir, "none"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// A FIFO is refused before it is opened: opening one for reading would
// wait for a writer that never comes.
func TestReadLimitedRefusesFIFOAtOnce(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadLimited(fifo, 10); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "named pipe") {
			t.Errorf("FIFO: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ReadLimited of a FIFO did not return within 5 s")
	}
	if err := CheckRegular("/dev/null"); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "character device") {
		t.Errorf("/dev/null: %v", err)
	}
}
