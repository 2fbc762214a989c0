package pyapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	"github.com/hymn-net/hymn/python"
)

// CacheRoot is where root's copy of the Python package is extracted.
var CacheRoot = "/var/cache/hymn/python"

// PackageDir returns the directory to put first on PYTHONPATH: the
// embedded mininet package extracted into a cache directory named by its
// content's hash. An existing copy is used only when it is owned by this
// user, closed to others' writes and byte for byte what the binary holds;
// anything else is replaced, so a tampered cache is never imported.
func PackageDir() (string, error) {
	files, sum, err := embedded()
	if err != nil {
		return "", err
	}
	root := CacheRoot
	if os.Geteuid() != 0 {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("python package cache: %w", err)
		}
		root = filepath.Join(base, "hymn", "python")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("python package cache: %w", err)
	}
	if err := checkOwned(root); err != nil {
		return "", err
	}
	dir := filepath.Join(root, sum[:16])
	if matches(dir, files) {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(root, ".new-")
	if err != nil {
		return "", fmt.Errorf("python package cache: %w", err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	for _, name := range sortedKeys(files) {
		dst := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, files[name], 0o644); err != nil {
			return "", fmt.Errorf("python package cache: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	// The stale or tampered copy goes; the new one takes its name
	// atomically, so a concurrent hymn python sees one or the other.
	old := dir + ".old"
	_ = os.RemoveAll(old)
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("python package cache: %w", err)
	}
	_ = os.RemoveAll(old)
	if err := os.Rename(tmp, dir); err != nil {
		if matches(dir, files) { // another hymn won the race
			return dir, nil
		}
		return "", fmt.Errorf("python package cache: %w", err)
	}
	return dir, nil
}

func embedded() (map[string][]byte, string, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(python.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := python.Files.ReadFile(p)
		files[p] = data
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("embedded python package: %w", err)
	}
	h := sha256.New()
	for _, name := range sortedKeys(files) {
		_, _ = fmt.Fprintf(h, "%s\x00%d\x00", name, len(files[name]))
		h.Write(files[name])
	}
	return files, hex.EncodeToString(h.Sum(nil)), nil
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// matches reports whether dir holds exactly files (extra __pycache__
// directories aside), each owned by us and not writable by others.
func matches(dir string, files map[string][]byte) bool {
	if checkOwned(dir) != nil {
		return false
	}
	seen := 0
	ok := true
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			ok = false
			return err
		}
		if checkOwned(p) != nil {
			ok = false
			return fs.SkipAll
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if filepath.Base(filepath.Dir(p)) == "__pycache__" {
			return nil
		}
		want, known := files[rel]
		got, err := os.ReadFile(p)
		if !known || err != nil || !bytes.Equal(got, want) {
			ok = false
			return fs.SkipAll
		}
		seen++
		return nil
	})
	return ok && seen == len(files)
}

func checkOwned(p string) error {
	st, err := os.Lstat(p)
	if err != nil {
		return err
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	if sys == nil || int(sys.Uid) != os.Geteuid() || st.Mode().Perm()&0o022 != 0 || st.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is not owned by this user or is writable by others: refusing to use it", p)
	}
	return nil
}
