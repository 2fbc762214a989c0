package pyapi_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
)

// TestDaemonOutlivesScript: the network of Mininet's low-level API (no
// Mininet object, so no stop()) stays after the script when a daemon
// runs in one of its nodes, as Mininet's namespace does (baresshd), and
// hymn clean removes it with the daemon; a shell's background job alone
// ends with the shell, and then nothing stays.
func TestDaemonOutlivesScript(t *testing.T) {
	testenv.RootAndTools(t, "python3", "bash", "ip", "setsid")
	script, err := filepath.Abs("testdata/linger/daemon.py")
	if err != nil {
		t.Fatal(err)
	}
	runOf := func(t *testing.T, out string) string {
		m := regexp.MustCompile(`RUN ([0-9a-f]+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("the script printed no run id:\n%s", out)
		}
		return m[1]
	}
	t.Run("daemon", func(t *testing.T) {
		out := runPython(t, t.TempDir(), 2*time.Minute, script)
		run := runOf(t, out)
		t.Cleanup(func() {
			if _, err := cleanRun(run); err != nil {
				t.Errorf("hymn clean: %v", err)
			}
		})
		if !strings.Contains(out, "still running: the network stays after the script") {
			t.Errorf("no notice that the network stays:\n%s", out)
		}
		ns := owner.NamespaceName(run, "lgh1")
		if _, err := os.Stat("/run/netns/" + ns); err != nil {
			t.Fatalf("node lgh1's namespace is gone after the script: %v\n%s", err, out)
		}
		// The daemon answers through the link to the root namespace.
		c := http.Client{Timeout: 5 * time.Second}
		resp, err := c.Get("http://10.77.0.1:8777/")
		if err != nil {
			t.Fatalf("the daemon in lgh1 does not answer after the script: %v\n%s", err, out)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		procs := procsIn(t, ns)
		if strings.Contains(procs, "sleep") {
			t.Errorf("the shell's job outlived its hangup; processes in lgh1:\n%s", procs)
		}
		rep, err := cleanRun(run)
		if err != nil {
			t.Fatalf("hymn clean: %v", err)
		}
		if rep.Processes == 0 {
			t.Errorf("hymn clean stopped no process (the daemon): %+v", rep)
		}
		assertGone(t, run, ns)
	})
	t.Run("nodaemon", func(t *testing.T) {
		out := runPython(t, t.TempDir(), 2*time.Minute, script, "nodaemon")
		run := runOf(t, out)
		if strings.Contains(out, "still running") {
			t.Errorf("a notice that the network stays, with no daemon:\n%s", out)
		}
		assertGone(t, run, owner.NamespaceName(run, "lgh1"))
	})
}

// cleanRun is hymn clean for one run. A netlink dump that the other
// networks on the machine interrupt fails a clean, which keeps the run's
// record so that the next one tries again: so does this.
func cleanRun(run string) (hymn.CleanReport, error) {
	var rep hymn.CleanReport
	var err error
	for range 3 {
		var r hymn.CleanReport
		r, err = hymn.Clean(context.Background(), hymn.CleanOptions{Runs: []string{run}})
		rep.Processes += r.Processes
		rep.Namespaces += r.Namespaces
		if err == nil {
			break
		}
	}
	return rep, err
}

// procsIn lists the commands running in a namespace (ip netns pids).
func procsIn(t *testing.T, ns string) string {
	t.Helper()
	var b strings.Builder
	out, err := exec.Command("ip", "netns", "pids", ns).Output()
	if err != nil {
		t.Fatalf("ip netns pids %s: %v", ns, err)
	}
	for _, pid := range strings.Fields(string(out)) {
		if comm, err := os.ReadFile("/proc/" + pid + "/comm"); err == nil {
			b.WriteString(pid + " " + string(comm))
		}
	}
	return b.String()
}

// assertGone checks that nothing of the run is left: its namespace, its
// record, and the root end of the link (lgr0-eth0), which the kernel
// deletes with the namespace, in the background.
func assertGone(t *testing.T, run, ns string) {
	t.Helper()
	if _, err := os.Stat("/run/netns/" + ns); err == nil {
		t.Errorf("namespace %s is left", ns)
	}
	if _, err := owner.ReadState(run); err == nil {
		t.Errorf("run %s still has its record", run)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := os.Stat("/sys/class/net/lgr0-eth0")
		if err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the root namespace's lgr0-eth0 is left")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
