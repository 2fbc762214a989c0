package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
)

// hymnNamespaces lists the namespaces hymn runs own (hymn-<run>-<node>).
func hymnNamespaces(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "hymn-") {
			m[f[0]] = true
		}
	}
	return m
}

// TestSignalsLeaveNothing: hymn piped into a reader that goes away early
// (hymn ... | head -1), or sent SIGHUP or SIGTERM in the middle of a run,
// still removes everything it built.
func TestSignalsLeaveNothing(t *testing.T) {
	testenv.Root(t)
	bin := filepath.Join(t.TempDir(), "hymn")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	before := hymnNamespaces(t)
	leftovers := func(what string) {
		t.Helper()
		for ns := range hymnNamespaces(t) {
			if !before[ns] {
				t.Errorf("%s left namespace %s behind", what, ns)
				if out, err := exec.Command(bin, "clean").CombinedOutput(); err != nil {
					t.Errorf("hymn clean: %v\n%s", err, out)
				}
			}
		}
	}
	// sh waits for every command of the pipeline, so hymn has exited.
	if out, err := exec.Command("sh", "-c", bin+" --topo linear,3 --test pingall 2>&1 | head -1").CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "*** Creating network") {
		t.Fatalf("hymn | head -1: %v %q", err, out)
	}
	leftovers("hymn | head -1")
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		// The shell waits on stdin that never ends, so the signal comes
		// while the network is up.
		cmd := exec.Command(bin, "--topo", "linear,3")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		// Never written: closing it only ends hymn's shell if still running.
		defer func() { _ = stdin.Close() }()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(20 * time.Second); len(hymnNamespaces(t)) < len(before)+6 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond)
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatalf("sending %v: %v", sig, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			// Its exit status after a signal is not what this test
			// judges; what it leaves behind is.
			t.Logf("hymn after %v: %v", sig, err)
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill() // the test fails anyway; it may have just ended
			t.Fatalf("hymn did not end after %v", sig)
		}
		leftovers(sig.String())
	}
}
