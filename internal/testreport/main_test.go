package main

import (
	"bytes"
	"strings"
	"testing"
)

func feed(t *testing.T, events []event, require bool) (string, []string, []string) {
	t.Helper()
	var out bytes.Buffer
	r := &report{out: &out, outputs: map[testKey][]string{}, skips: map[string][]string{}}
	for _, e := range events {
		r.handle(e)
	}
	forbidden := r.summary(require)
	return out.String(), r.failed, forbidden
}

func TestReport(t *testing.T) {
	p := "github.com/hymn-net/hymn/cli"
	events := []event{
		{Action: "output", Package: p, Test: "TestA", Output: "=== RUN   TestA\n"},
		{Action: "output", Package: p, Test: "TestA", Output: "    a_test.go:10: needs root (network namespaces, veth, packet sockets)\n"},
		{Action: "skip", Package: p, Test: "TestA"},
		{Action: "output", Package: p, Test: "TestB", Output: "    b_test.go:3: hardware this machine does not have: KVM\n"},
		{Action: "skip", Package: p, Test: "TestB"},
		{Action: "output", Package: p, Test: "TestC", Output: "    c_test.go:7: boom\n"},
		{Action: "fail", Package: p, Test: "TestC"},
		{Action: "output", Package: p, Test: "TestD", Output: "    d_test.go:7: quiet\n"},
		{Action: "pass", Package: p, Test: "TestD"},
		{Action: "output", Package: p, Output: "FAIL\tgithub.com/hymn-net/hymn/cli\t0.1s\n"},
	}
	out, failed, forbidden := feed(t, events, true)
	for _, want := range []string{"c_test.go:7: boom", "FAIL\tgithub.com/hymn-net/hymn/cli", "*** Skipped tests: 2", "1  needs root", "(cli.TestA)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "quiet") {
		t.Errorf("a passing test's output was printed:\n%s", out)
	}
	if len(failed) != 1 || failed[0] != p+".TestC" {
		t.Errorf("failed = %v", failed)
	}
	if len(forbidden) != 1 || forbidden[0] != "cli.TestA" {
		t.Errorf("forbidden = %v (the hardware skip is allowed, the root skip is not)", forbidden)
	}
	if _, _, forbidden := feed(t, events, false); len(forbidden) != 0 {
		t.Errorf("without -require nothing is forbidden: %v", forbidden)
	}
}

func TestSkipReasonWithoutMessage(t *testing.T) {
	if got := skipReason([]string{"=== RUN   TestX\n"}); got != "(no reason given)" {
		t.Errorf("got %q", got)
	}
}
