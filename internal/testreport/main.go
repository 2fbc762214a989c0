// Command testreport reads `go test -json` on stdin and prints what a
// person needs from a long test run: one line per package (as go test
// prints without -v), the full output of every failing test, and at the end
// the skipped tests counted by reason.
//
// With -require (set by scripts/test.sh under CI) a skip is a failure
// unless its reason says the machine lacks hardware it cannot have (see
// internal/testenv.Hardware): CI must not pass by testing less.
//
//	go test -json ./... | go run ./internal/testreport [-require]
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	ImportPath string
	Test       string
	Output     string
}

// HardwarePrefix starts the reason of every skip that is allowed under
// -require; it matches internal/testenv.Hardware.
const HardwarePrefix = "hardware this machine does not have"

type testKey struct{ pkg, test string }

type report struct {
	// out is stdout: a failed write there has nowhere to be reported, so
	// the writes to it ignore their errors.
	out      io.Writer
	outputs  map[testKey][]string
	skips    map[string][]string // reason -> tests
	failed   []string
	packages int
}

var fileLine = regexp.MustCompile(`^\s+\S+\.go:\d+: `)

func (r *report) handle(e event) {
	key := testKey{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		_, _ = fmt.Fprint(r.out, e.Output)
	case "output":
		if e.Test == "" {
			// Package-level lines: the ok/FAIL summary, build errors, what
			// a test binary prints outside any test.
			line := e.Output
			if line == "PASS\n" || strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "testing: warning: no tests") {
				return
			}
			_, _ = fmt.Fprint(r.out, line)
			return
		}
		r.outputs[key] = append(r.outputs[key], e.Output)
	case "fail":
		if e.Test == "" {
			return
		}
		r.failed = append(r.failed, e.Package+"."+e.Test)
		for _, l := range r.outputs[key] {
			_, _ = fmt.Fprint(r.out, l)
		}
		delete(r.outputs, key)
	case "skip":
		if e.Test != "" {
			reason := skipReason(r.outputs[key])
			r.skips[reason] = append(r.skips[reason], shortPkg(e.Package)+"."+e.Test)
		}
		delete(r.outputs, key)
	case "pass":
		delete(r.outputs, key)
		if e.Test == "" {
			r.packages++
		}
	}
}

// skipReason is the last message the test logged before it skipped, without
// its file:line prefix.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		if loc := fileLine.FindStringIndex(l); loc != nil {
			return strings.TrimSpace(l[loc[1]:])
		}
	}
	return "(no reason given)"
}

func shortPkg(p string) string {
	return strings.TrimPrefix(p, "github.com/hymn-net/hymn/")
}

// summary prints the skip counts and returns the skips that -require forbids.
func (r *report) summary(require bool) (forbidden []string) {
	reasons := make([]string, 0, len(r.skips))
	total := 0
	for reason, tests := range r.skips {
		reasons = append(reasons, reason)
		total += len(tests)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if a, b := len(r.skips[reasons[i]]), len(r.skips[reasons[j]]); a != b {
			return a > b
		}
		return reasons[i] < reasons[j]
	})
	_, _ = fmt.Fprintf(r.out, "*** Skipped tests: %d\n", total)
	for _, reason := range reasons {
		tests := r.skips[reason]
		sort.Strings(tests)
		_, _ = fmt.Fprintf(r.out, "%4d  %s\n      (%s)\n", len(tests), reason, strings.Join(tests, ", "))
		if require && !strings.HasPrefix(reason, HardwarePrefix) {
			forbidden = append(forbidden, tests...)
		}
	}
	return forbidden
}

func main() {
	require := flag.Bool("require", false, "fail when a test skipped for a reason other than missing hardware")
	flag.Parse()
	r := &report{out: os.Stdout, outputs: map[testKey][]string{}, skips: map[string][]string{}}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			// Not test2json: pass it through (go vet, linker messages).
			_, _ = fmt.Fprintln(r.out, string(line))
			continue
		}
		if e.Package == "" {
			e.Package = e.ImportPath
		}
		r.handle(e)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	forbidden := r.summary(*require)
	if len(r.failed) > 0 {
		_, _ = fmt.Fprintf(r.out, "*** Failed tests: %d: %s\n", len(r.failed), strings.Join(r.failed, ", "))
		os.Exit(1)
	}
	if len(forbidden) > 0 {
		_, _ = fmt.Fprintf(r.out, "*** %d tests skipped under HYMN_REQUIRE=all for reasons CI's setup can fix: %s\n", len(forbidden), strings.Join(forbidden, ", "))
		os.Exit(1)
	}
}
