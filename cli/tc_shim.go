package cli

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// tcShimRoot holds, per hymn binary, a directory of small scripts: a tc
// that runs that binary's hymn tc, an ovs-vsctl that runs its hymn
// ovs-vsctl. hymn exec puts it first on the PATH of what
// runs in a node, so a node's shells, popen'ed processes and scripts find
// hymn's tc before the system's.
var tcShimRoot = "/var/cache/hymn/shim"

// tcShimDir returns the shim directory of this binary, making it when
// needed. Like the Python package's cache it is used only when owned by
// this user, closed to others' writes and holding exactly the script.
func tcShimDir() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if self, err = filepath.EvalSymlinks(self); err != nil {
		return "", err
	}
	if strings.ContainsAny(self, "'\n") {
		return "", fmt.Errorf("tc shim: the hymn binary's path %q cannot be quoted", self)
	}
	scripts := map[string][]byte{}
	h := sha256.New()
	for _, name := range shimTools {
		scripts[name] = []byte("#!/bin/sh\n# hymn's " + name + " for hymn networks (hymn " + name + ")\nexec '" + self + "' " + name + " \"$@\"\n")
		h.Write(scripts[name])
	}
	sum := h.Sum(nil)
	root := tcShimRoot
	if os.Geteuid() != 0 {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		root = filepath.Join(base, "hymn", "shim")
	}
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	if shimOK(dir, scripts) {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	if err := ownedClosed(root); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, ".new-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // gone once renamed; else the leftover
	for name, script := range scripts {
		if err := os.WriteFile(filepath.Join(tmp, name), script, 0o755); err != nil {
			return "", err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	_ = os.RemoveAll(dir) // a stale or tampered copy
	if err := os.Rename(tmp, dir); err != nil && !shimOK(dir, scripts) {
		return "", err
	}
	return dir, nil
}

func shimOK(dir string, scripts map[string][]byte) bool {
	if ownedClosed(dir) != nil {
		return false
	}
	for name, script := range scripts {
		path := filepath.Join(dir, name)
		if ownedClosed(path) != nil {
			return false
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, script) {
			return false
		}
	}
	return true
}

// shimTools are the commands the shim directory holds: hymn's tc, and
// its ovs-vsctl (tc_ovsvsctl.go).
var shimTools = []string{"tc", "ovs-vsctl"}

func ownedClosed(p string) error {
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

// nodeEnv is the environment of a command run in node of run: the
// caller's, with hymn's tc first on PATH and the node named for it.
func nodeEnv(run, node string) []string {
	env := os.Environ()
	out := env[:0:0]
	path := os.Getenv("PATH")
	for _, e := range env {
		if strings.HasPrefix(e, envRun+"=") || strings.HasPrefix(e, envNode+"=") || strings.HasPrefix(e, "PATH=") {
			continue
		}
		out = append(out, e)
	}
	if dir, err := tcShimDir(); err == nil {
		// Once: a shell started from a node's shell keeps one copy.
		parts := strings.Split(path, ":")
		kept := parts[:0]
		for _, p := range parts {
			if p != dir {
				kept = append(kept, p)
			}
		}
		path = strings.Join(append([]string{dir}, kept...), ":")
	}
	if path != "" {
		out = append(out, "PATH="+path)
	}
	return append(out, envRun+"="+run, envNode+"="+node)
}
