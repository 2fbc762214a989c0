package topo

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Files resolves the host files that parameters name: a link's trace and
// schedule, a VM node's image, kernel, initrd and hostfs. Which Files a
// parameter is read with depends on where it came from, not on the key:
// input the local user gave (the command line, a topology file on disk, a
// Go program, a Python script) gets LocalFiles; input that arrives over a
// socket or an API server (the live view's actions, the worker protocol's
// api, a Topology resource) gets RemoteFiles, or nil, and so cannot make
// hymn read, or reveal the existence of, a file of the host.
type Files interface {
	// Path returns the host path that name (given for key) stands for,
	// or an error naming key when this input may name no file. It
	// touches no file: the caller opens the path, with its own bounds.
	Path(key, name string) (string, error)
}

// ErrFileRefused matches the error of a file name that input from outside
// gave (errors.Is).
var ErrFileRefused = errors.New("a file name is not accepted")

// LocalFiles resolves names for input the local user gave: a relative
// name is taken from dir ("" for the working directory), as the user who
// wrote it would read it.
func LocalFiles(dir string) Files { return localFiles{dir: dir} }

type localFiles struct{ dir string }

func (f localFiles) Path(key, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("%s: no file name given", key)
	}
	if f.dir == "" || filepath.IsAbs(name) {
		return name, nil
	}
	return filepath.Join(f.dir, name), nil
}

// RemoteFiles is the Files of input from source ("the live view", "a
// Topology resource"): every name is refused, with one line that names the
// key and the source, before any file is touched.
func RemoteFiles(source string) Files { return remoteFiles{source: source} }

type remoteFiles struct{ source string }

func (f remoteFiles) Path(key, _ string) (string, error) {
	return "", &FileRefusedError{Key: key, Source: f.source}
}

// FileRefusedError is a file name in input from outside. It quotes neither
// the name nor anything about the file.
type FileRefusedError struct {
	Key    string // the parameter that named a file
	Source string // where the input came from
}

func (e *FileRefusedError) Error() string {
	return fmt.Sprintf("%s: a file name is not accepted from %s; give it in a topology file or on the command line of the machine that runs the network", e.Key, sourceName(e.Source))
}

func sourceName(s string) string {
	if s == "" {
		return "remote input"
	}
	return s
}

// sourceOf names where files' input came from, for messages.
func sourceOf(files Files) string {
	if r, ok := files.(remoteFiles); ok {
		return sourceName(r.source)
	}
	return sourceName("")
}

// Is makes a FileRefusedError match ErrFileRefused.
func (e *FileRefusedError) Is(target error) bool { return target == ErrFileRefused }

// FilePath resolves name with files; a nil files is remote input from an
// unnamed source, and refuses every name.
func FilePath(files Files, key, name string) (string, error) {
	if files == nil {
		return RemoteFiles("").Path(key, name)
	}
	return files.Path(key, name)
}

// IsRemote reports whether files refuses every name (nil or RemoteFiles).
func IsRemote(files Files) bool {
	if files == nil {
		return true
	}
	_, ok := files.(remoteFiles)
	return ok
}

// nodeFileParams are the node parameters (a VM node's) that name a host
// file or directory, and the value of each that names none.
var nodeFileParams = map[string]string{"kernel": "", "initrd": "", "image": "", "hostfs": "none"}

// checkNodeFiles refuses, for input from outside, the node parameters that
// would have hymn open a host file or share a host directory: a VM's
// kernel, initrd, image and hostfs (other than none), and share=root.
// Local input keeps its names as written.
func checkNodeFiles(files Files, p Params) error {
	if !IsRemote(files) {
		return nil
	}
	for _, k := range sortedKeys(p) {
		none, ok := nodeFileParams[k]
		if !ok || (none != "" && strings.TrimSpace(p[k]) == none) {
			continue
		}
		if _, err := FilePath(files, k, p[k]); err != nil {
			return err
		}
	}
	if strings.TrimSpace(p["share"]) == "root" {
		return fmt.Errorf("share: root (every file root may read) is not accepted from %s; use share=world", sourceOf(files))
	}
	return nil
}
