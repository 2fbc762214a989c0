package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestReadLimited(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("12345"), 0o600)
	if data, err := ReadLimited(small, 5); err != nil || string(data) != "12345" {
		t.Errorf("at the limit: %q, %v", data, err)
	}
	if _, err := ReadLimited(small, 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("above the limit: %v", err)
	}
	if _, err := ReadLimited("/dev/zero", 1<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadLimited(dir, 10); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("a directory: %v", err)
	}
	if _, err := ReadLimited(filepath.Join(dir, "none"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}
