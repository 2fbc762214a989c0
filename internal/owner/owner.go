// Package owner marks what hymn creates as hymn's and finds it again.
//
// Every network gets a run id. Its namespaces are named
// "hymn-<run>-<node>" and a state file /run/hymn/<run>.json records the pid
// and start time of the process that owns the run. A run whose owner is gone
// (crash, kill -9) is stale; Clean removes stale runs and nothing else:
// names without the prefix are never touched, and live runs only when asked.
package owner

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hymn-net/hymn/internal/proctree"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
)

// Prefix starts the name of every namespace hymn creates.
const Prefix = "hymn-"

// StateDir holds one state file per run.
const StateDir = "/run/hymn"

// RunIDLen is the length of a run id in hex digits.
const RunIDLen = 6

// NewRunID returns a fresh random run id.
func NewRunID() string {
	b := make([]byte, RunIDLen/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// NamespaceName is the namespace name of a node in a run.
func NamespaceName(run, node string) string { return Prefix + run + "-" + node }

// RunOfNamespace returns the run id of a hymn namespace name.
func RunOfNamespace(ns string) (string, bool) {
	rest, ok := strings.CutPrefix(ns, Prefix)
	if !ok || len(rest) < RunIDLen+2 || rest[RunIDLen] != '-' {
		return "", false
	}
	run := rest[:RunIDLen]
	if _, err := hex.DecodeString(run); err != nil {
		return "", false
	}
	return run, true
}

// State is what a state file records about a run's owner.
type State struct {
	Run       string    `json:"run"`
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"` // /proc/<pid>/stat field 22, to survive pid reuse
	Created   time.Time `json:"created"`
}

func statePath(run string) string { return filepath.Join(StateDir, run+".json") }

// Claim records the current process as the owner of run. It must be called
// before the run creates anything, so a crash at any later point leaves a
// stale run that Clean can find.
func Claim(run string) error {
	if err := os.MkdirAll(StateDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", StateDir, err)
	}
	st := State{Run: run, PID: os.Getpid(), StartTime: processStartTime(os.Getpid()), Created: time.Now()}
	data, _ := json.Marshal(st)
	if err := os.WriteFile(statePath(run), data, 0o644); err != nil {
		return fmt.Errorf("writing the state of run %s: %w", run, err)
	}
	return nil
}

// Release forgets a run once everything it made is gone.
func Release(run string) error {
	err := os.Remove(statePath(run))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// Alive reports whether the run's owner process still runs.
func Alive(run string) bool {
	data, err := os.ReadFile(statePath(run))
	if err != nil {
		return false
	}
	var st State
	if json.Unmarshal(data, &st) != nil || st.PID <= 0 {
		return false
	}
	// A killed owner can linger as a zombie until its parent reaps it.
	if syscall.Kill(st.PID, 0) != nil || isZombie(st.PID) {
		return false
	}
	return processStartTime(st.PID) == st.StartTime
}

// Runs lists every run that has a namespace or a state file.
func Runs() ([]string, error) {
	seen := map[string]bool{}
	var runs []string
	add := func(r string) {
		if !seen[r] {
			seen[r] = true
			runs = append(runs, r)
		}
	}
	names, err := netnsx.List(Prefix)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if r, ok := RunOfNamespace(n); ok {
			add(r)
		}
	}
	entries, err := os.ReadDir(StateDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if r, ok := strings.CutSuffix(e.Name(), ".json"); ok && len(r) == RunIDLen {
			add(r)
		}
	}
	return runs, nil
}

// Namespaces lists a run's namespaces.
func Namespaces(run string) ([]string, error) {
	return netnsx.List(Prefix + run + "-")
}

// processStartTime reads field 22 of /proc/<pid>/stat (0 if unreadable).
func processStartTime(pid int) uint64 {
	f := proctree.StatFields(pid)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}
