package cli

import (
	"bufio"
	"os"
	"strings"
)

// historySize is how many lines the shell remembers, as Mininet's 1000.
const historySize = 1000

// history is the shell's line history (newest first for x/term), kept in a
// file so it survives between runs.
type history struct {
	path  string
	lines []string // oldest first
}

func loadHistory(path string) *history {
	h := &history{path: path}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" {
				h.lines = append(h.lines, line)
			}
		}
		f.Close()
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
	if f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
		f.WriteString(line + "\n")
		f.Close()
	}
}
