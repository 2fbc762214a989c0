package mnlog

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// Level is a Mininet log level; higher is more important.
type Level int

// Mininet's levels, in its order.
const (
	Debug Level = iota
	Info
	Output
	Warning
	Error
	Critical
)

var levelNames = map[string]Level{
	"debug": Debug, "info": Info, "output": Output, "warning": Warning,
	"warn": Warning, "error": Error, "critical": Critical,
}

// LevelNames is the accepted -v values, in Mininet's order.
var LevelNames = []string{"debug", "info", "output", "warning", "warn", "error", "critical"}

// ParseLevel parses a -v value.
func ParseLevel(s string) (Level, error) {
	l, ok := levelNames[strings.ToLower(s)]
	if !ok {
		return 0, fmt.Errorf("unknown verbosity %q: use one of %s", s, strings.Join(LevelNames, ", "))
	}
	return l, nil
}

// Logger writes messages at or above its level. The zero value and a nil
// *Logger discard everything.
type Logger struct {
	mu    sync.Mutex
	w     io.Writer
	level Level
}

// New returns a logger writing to w at the given level.
func New(w io.Writer, level Level) *Logger { return &Logger{w: w, level: level} }

// Enabled reports whether messages at l are printed.
func (g *Logger) Enabled(l Level) bool { return g != nil && g.w != nil && l >= g.level }

// Log prints the arguments joined by single spaces, as Mininet's log does.
func (g *Logger) Log(l Level, args ...any) {
	if !g.Enabled(l) {
		return
	}
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = fmt.Sprint(a)
	}
	g.mu.Lock()
	// A log has nowhere to report its own failed writes (here or in Logf).
	_, _ = io.WriteString(g.w, strings.Join(parts, " "))
	g.mu.Unlock()
}

// Logf prints a formatted message.
func (g *Logger) Logf(l Level, format string, args ...any) {
	if g.Enabled(l) {
		g.mu.Lock()
		_, _ = fmt.Fprintf(g.w, format, args...)
		g.mu.Unlock()
	}
}

// Shortcuts for the common levels.
func (g *Logger) Info(args ...any)                    { g.Log(Info, args...) }
func (g *Logger) Infof(format string, args ...any)    { g.Logf(Info, format, args...) }
func (g *Logger) Output(args ...any)                  { g.Log(Output, args...) }
func (g *Logger) Outputf(format string, args ...any)  { g.Logf(Output, format, args...) }
func (g *Logger) Debugf(format string, args ...any)   { g.Logf(Debug, format, args...) }
func (g *Logger) Warningf(format string, args ...any) { g.Logf(Warning, format, args...) }
func (g *Logger) Errorf(format string, args ...any)   { g.Logf(Error, format, args...) }
