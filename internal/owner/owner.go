// Package owner marks what hymn creates as hymn's and finds it again.
//
// Every network gets a run id: 16 hex digits (64 random bits), so two runs
// never share one by chance. Its namespaces are named "hymn-<run>-<node>"
// (namespace names are file names, not interface names, so their length is
// not bounded by IFNAMSIZ), and a record /run/hymn/<run>.json holds the pid
// and start time of the process that owns the run. The record is created
// exclusively and atomically (written to a private temporary file, then
// linked into place) before anything of the run exists, so a reader never
// sees a half-written record and two runs can never claim one id.
//
// A run whose owner is gone (crash, kill -9) is stale; Clean removes stale
// runs and nothing else: names without the prefix are never touched, and
// live runs only when asked. An owner is alive when its pid exists, is not
// a zombie, and has the start time the record holds (so a reused pid does
// not keep a dead run alive, nor does a record make a stranger's process
// its owner).
//
// Interface names are limited to 15 bytes, so the one root-namespace
// interface a run makes (the NAT link) is named from a short slot number
// allocated exclusively under /run/hymn/nat, and carries the full run id
// in its alias.
package owner

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/proctree"
)

// Prefix starts the name of every namespace hymn creates.
const Prefix = "hymn-"

// StateDir holds one record per run.
const StateDir = "/run/hymn"

// RunIDLen is the length of a run id in hex digits (64 bits).
const RunIDLen = 16

// legacyRunIDLen is the length of the run ids of earlier versions (24
// bits); their leftovers are still recognised, so clean removes them.
const legacyRunIDLen = 6

// ErrClaimed means a run id already has a record.
var ErrClaimed = errors.New("run id already claimed")

// stateDir is StateDir, replaceable by tests that must not touch the
// machine's records.
var stateDir = StateDir

// NewRunID returns a fresh random run id.
func NewRunID() string {
	b := make([]byte, RunIDLen/2)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// ValidRunID reports whether s has the form of a run id (this version's or
// an earlier one's).
func ValidRunID(s string) bool {
	if len(s) != RunIDLen && len(s) != legacyRunIDLen {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// NamespaceName is the namespace name of a node in a run.
func NamespaceName(run, node string) string { return Prefix + run + "-" + node }

// RunOfNamespace returns the run id of a hymn namespace name.
func RunOfNamespace(ns string) (string, bool) {
	rest, ok := strings.CutPrefix(ns, Prefix)
	if !ok {
		return "", false
	}
	for _, n := range []int{RunIDLen, legacyRunIDLen} {
		// Hex digits hold no '-', so at most one length fits.
		if len(rest) >= n+2 && rest[n] == '-' && ValidRunID(rest[:n]) {
			return rest[:n], true
		}
	}
	return "", false
}

// State is what a record says about a run's owner.
type State struct {
	Run       string    `json:"run"`
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"` // /proc/<pid>/stat field 22, to survive pid reuse
	Created   time.Time `json:"created"`
}

func statePath(run string) string { return filepath.Join(stateDir, run+".json") }

// tmpPrefix starts the name of a record being written: Runs ignores it,
// and Clean removes it once its writer (the pid in its name) is gone.
const tmpPrefix = ".tmp-"

// CreateExclusive creates path with data, all or nothing: the data goes to
// a temporary file in the same directory, which is then hard-linked to
// path. link(2) fails if path exists, so of two creators exactly one wins,
// and path never exists with partial content. It returns an error wrapping
// os.ErrExist if path exists.
func CreateExclusive(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, tmpPrefix+strconv.Itoa(os.Getpid())+"-"+NewRunID()[:8]+"-"+filepath.Base(path))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp) }() // a leftover is swept by removeStaleTemps once we are gone
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp, path)
}

// Claim records the current process as the owner of run. It must be called
// before the run creates anything, so a crash at any later point leaves a
// stale run that Clean can find.
func Claim(run string) error {
	if !ValidRunID(run) {
		return fmt.Errorf("claiming run %q: not a run id", run)
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", stateDir, err)
	}
	pid := os.Getpid()
	st := State{Run: run, PID: pid, StartTime: processStartTime(pid), Created: time.Now()}
	data, _ := json.Marshal(st)
	if err := CreateExclusive(statePath(run), data, 0o644); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("recording run %s: %w", run, ErrClaimed)
		}
		return fmt.Errorf("recording run %s: %w", run, err)
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

// ReadState reads a run's record.
func ReadState(run string) (State, error) {
	var st State
	data, err := os.ReadFile(statePath(run))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("record of run %s: %w", run, err)
	}
	return st, nil
}

// unreadableGrace is how long a record that cannot be parsed still counts
// as alive. Records are created atomically, so this only covers records
// from writers that did not (earlier versions, a hand-made file).
const unreadableGrace = 30 * time.Second

// Alive reports whether the run's owner process still runs. A run without a
// record is dead (the record exists before anything else of a run does and
// goes only after everything else), except that an unparsable record younger
// than unreadableGrace counts as alive: being unsure must never remove a
// live run.
func Alive(run string) bool {
	st, err := ReadState(run)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		fi, serr := os.Stat(statePath(run))
		return serr == nil && time.Since(fi.ModTime()) < unreadableGrace
	}
	return ProcessAlive(st.PID, st.StartTime)
}

// ProcessAlive reports whether pid is a running (not zombie) process that
// started at startTime (clock ticks since boot, /proc/<pid>/stat field 22).
func ProcessAlive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	f := proctree.StatFields(pid)
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return false
	}
	v, err := strconv.ParseUint(f[19], 10, 64)
	return err == nil && v == startTime
}

// Runs lists every run that has a namespace, a record, SR-IOV state or a
// NAT slot.
func Runs() ([]string, error) {
	seen := map[string]bool{}
	var runs []string
	add := func(r string) {
		if ValidRunID(r) && !seen[r] {
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
	entries, err := os.ReadDir(stateDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if r, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			add(r)
		}
		if r, ok := strings.CutSuffix(e.Name(), "-sriov"); ok && e.IsDir() {
			add(r)
		}
	}
	for _, s := range natSlots() {
		add(s.run)
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

// removeStaleTemps removes temporary files of records whose writer is gone
// (a kill -9 between creating and linking one).
func removeStaleTemps(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tmpPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
			_ = os.Remove(filepath.Join(dir, e.Name())) // best effort: another sweep may have taken it
		}
	}
}
