package vm

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// cpioWriter writes the "newc" cpio format the kernel unpacks as an
// initramfs. Timestamps and owners are fixed (0, root) so the same inputs
// give the same bytes.
type cpioWriter struct {
	w   *bufio.Writer
	ino int
	err error
}

func newCpioWriter(w io.Writer) *cpioWriter { return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20)} }

const (
	cpioDir  = 0o040000
	cpioFile = 0o100000
	cpioLink = 0o120000
	cpioChr  = 0o020000
)

func (c *cpioWriter) header(name string, mode uint32, size int, rmaj, rmin uint32) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&0o170000 == cpioDir {
		nlink = 2
	}
	_, c.err = fmt.Fprintf(c.w, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rmaj, rmin, len(name)+1, 0)
	if c.err != nil {
		return
	}
	if _, c.err = c.w.WriteString(name); c.err != nil {
		return
	}
	if c.err = c.w.WriteByte(0); c.err != nil {
		return
	}
	c.pad(110 + len(name) + 1)
}

func (c *cpioWriter) pad(n int) {
	if r := n % 4; r != 0 && c.err == nil {
		_, c.err = c.w.Write(make([]byte, 4-r))
	}
}

func (c *cpioWriter) Dir(name string) { c.header(name, cpioDir|0o755, 0, 0, 0) }

func (c *cpioWriter) File(name string, mode uint32, data []byte) {
	c.header(name, cpioFile|mode, len(data), 0, 0)
	if c.err == nil {
		_, c.err = c.w.Write(data)
		c.pad(len(data))
	}
}

func (c *cpioWriter) Symlink(name, target string) {
	c.header(name, cpioLink|0o777, len(target), 0, 0)
	if c.err == nil {
		_, c.err = c.w.WriteString(target)
		c.pad(len(target))
	}
}

func (c *cpioWriter) CharDev(name string, mode, major, minor uint32) {
	c.header(name, cpioChr|mode, 0, major, minor)
}

// Close writes the trailer and flushes.
func (c *cpioWriter) Close() error {
	c.header("TRAILER!!!", 0, 0, 0, 0)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}

// writeCpioFile writes a cpio archive to path through fn.
func writeCpioFile(path string, fn func(c *cpioWriter)) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	c := newCpioWriter(f)
	fn(c)
	if err := c.Close(); err != nil {
		_ = f.Close() // the write error is the one reported
		return err
	}
	return f.Close()
}
