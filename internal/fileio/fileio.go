// Package fileio reads files whose size a user chose: a topology, a trace,
// an inventory. A mistaken path (a disk image, /dev/zero, a FIFO) must fail
// fast instead of filling memory, and every reader in hymn does that here.
package fileio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrTooLarge is wrapped by ReadLimited's error for a file above its limit.
var ErrTooLarge = errors.New("file is too large")

// ErrNotRegular is wrapped by CheckRegular's (and so ReadLimited's) error
// for a path that names a FIFO, device, socket or directory.
var ErrNotRegular = errors.New("not a regular file")

// CheckRegular refuses, without opening it, a path that is not a regular
// file (symbolic links are followed). Opening a FIFO for reading blocks
// until a writer comes, and a device or socket never ends, so every file a
// user names (topology, MiniEdit, custom, trace) is checked here first.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if pe, ok := errors.AsType[*os.PathError](err); ok {
		pe.Op = "open" // what the caller asked for: "open x: no such file or directory"
	}
	if err != nil {
		return err
	}
	if st.Mode().IsRegular() {
		return nil
	}
	return &os.PathError{Op: "open", Path: path, Err: notRegular(st.Mode())}
}

// notRegularError says what a path is instead of a regular file; it
// matches ErrNotRegular, and syscall.EISDIR for a directory.
type notRegularError struct{ mode os.FileMode }

func notRegular(m os.FileMode) error { return notRegularError{m} }

func (e notRegularError) Error() string {
	return "not a regular file: it is a " + kindOf(e.mode)
}

func (e notRegularError) Unwrap() []error {
	if e.mode.IsDir() {
		return []error{ErrNotRegular, syscall.EISDIR}
	}
	return []error{ErrNotRegular}
}

func kindOf(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// ReadLimited reads a whole regular file, refusing anything above max
// bytes without reading further, and anything that is not a regular file
// before opening it (CheckRegular). The size is checked again on what was
// read, since a file can grow between the check and the read.
func ReadLimited(path string, max int64) ([]byte, error) {
	if err := CheckRegular(path); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should the path have been swapped for a FIFO since the
	// check, the open still returns at once (and the Stat below refuses it).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: path, Err: notRegular(st.Mode())}
	}
	tooLarge := fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, path, max)
	if st.Size() > max {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooLarge
	}
	return data, nil
}
