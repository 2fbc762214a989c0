package cli

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// historySize is how many lines the shell remembers, as Mininet's 1000.
const historySize = 1000

// historyReadMax is how much of the end of the history file is read:
// historySize lines of any sane length, without reading a huge file whole.
const historyReadMax = 1 << 20

// history is the shell's line history (newest first for x/term), kept in a
// file so it survives between runs.
type history struct {
	path  string
	lines []string // oldest first
}

// openHistory opens the history file as root must open a file in a home
// directory someone else may control: without following a symlink at the
// last component (O_NOFOLLOW), without blocking on a FIFO (O_NONBLOCK), and
// only if it is a regular file of ours with a single link (a hard link to
// /etc/shadow is refused too).
func openHistory(path string, flag int) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("history file %s: is a symbolic link, not used", path)
		}
		return nil, fmt.Errorf("history file %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close() // Stat's error is the one to report
		return nil, fmt.Errorf("history file %s: %w", path, err)
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.Mode().IsRegular():
		err = fmt.Errorf("history file %s: not a regular file, not used", path)
	case sys != nil && int(sys.Uid) != os.Geteuid():
		err = fmt.Errorf("history file %s: owned by uid %d, not by us, not used", path, sys.Uid)
	case sys != nil && sys.Nlink > 1:
		err = fmt.Errorf("history file %s: has %d hard links, not used", path, sys.Nlink)
	}
	if err != nil {
		_ = f.Close() // nothing written: refused before any use
		return nil, err
	}
	return f, nil
}

// loadHistory reads the history file, if it is safe to.
func loadHistory(path string) *history {
	h := &history{path: path}
	if path == "" {
		return h
	}
	f, err := openHistory(path, os.O_RDONLY)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			// Not saved to either: the same checks would refuse it.
			fmt.Fprintf(os.Stderr, "*** %v\n", err)
			h.path = ""
		}
		return h
	}
	defer func() { _ = f.Close() }() // read-only
	var r io.Reader = f
	if st, err := f.Stat(); err == nil && st.Size() > historyReadMax {
		if _, err := f.Seek(st.Size()-historyReadMax, io.SeekStart); err == nil {
			br := bufio.NewReader(f)
			_, _ = br.ReadString('\n') // the first line is cut: skipped (at EOF, so is all)
			r = br
		}
	}
	sc := bufio.NewScanner(io.LimitReader(r, historyReadMax))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			h.lines = append(h.lines, line)
		}
	}
	if len(h.lines) > historySize {
		h.lines = h.lines[len(h.lines)-historySize:]
	}
	return h
}

// Add is called by x/term for each line read; save does the file part.
func (h *history) Add(entry string) {
	if entry == "" || (len(h.lines) > 0 && h.lines[len(h.lines)-1] == entry) {
		return
	}
	h.lines = append(h.lines, entry)
	if len(h.lines) > historySize {
		h.lines = h.lines[1:]
	}
}

// Len returns the number of entries.
func (h *history) Len() int { return len(h.lines) }

// At returns the idx-th most recent entry.
func (h *history) At(idx int) string { return h.lines[len(h.lines)-1-idx] }

// save appends a line to the history file (best effort: a read-only home
// must not break the shell).
func (h *history) save(line string) {
	if h.path == "" || strings.TrimSpace(line) == "" {
		return
	}
	f, err := openHistory(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY)
	if err != nil {
		return
	}
	// Best effort, as said above: a failed append loses one history line.
	_, _ = f.WriteString(line + "\n")
	_ = f.Close()
}
