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

// ReadLimited reads a whole file, refusing anything above max bytes
// without reading further: a regular file by its size, a device or pipe
// after one buffer of max+1 bytes (so even /dev/zero ends after one pass).
func ReadLimited(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, &os.PathError{Op: "read", Path: path, Err: syscall.EISDIR}
	}
	tooLarge := fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, path, max)
	if st.Mode().IsRegular() && st.Size() > max {
		return nil, tooLarge
	}
	var data []byte
	if st.Mode().IsRegular() || max >= 64<<20 {
		data, err = io.ReadAll(io.LimitReader(f, max+1))
	} else {
		buf := make([]byte, max+1)
		var n int
		n, err = io.ReadFull(f, buf)
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = nil
		}
		data = buf[:n]
	}
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, tooLarge
	}
	return data, nil
}
