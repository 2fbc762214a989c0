package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
)

// hymn exec runs a command in a node of a network another process runs,
// with the command's exit status; bad input is exit 2 with one line.
func TestExecInNode(t *testing.T) {
	testenv.RootAndTools(t, "ip")
	bin := sharedBinary(t)
	// Host names of its own: other tests' networks (packages run in
	// parallel) have h1 and h2, and a name in several runs needs --run.
	top := topo.New()
	top.AddSwitch("s1", nil)
	for _, h := range []string{"xh1", "xh2"} {
		top.AddHost(h, nil)
		top.AddLink(h, "s1", nil)
	}
	net, err := hymn.New(top, hymn.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := net.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := net.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	hymnExec := func(args ...string) (int, string) {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"exec"}, args...)...).CombinedOutput()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	// The node's own addresses; its flags (-o) are the command's, not hymn's.
	if code, out := hymnExec("--run", net.RunID(), "xh2", "ip", "-o", "-4", "addr", "show", "dev", "xh2-eth0"); code != 0 || !strings.Contains(out, "10.0.0.2/8") {
		t.Errorf("exec xh2 ip addr: exit %d, %q", code, out)
	}
	if code, out := hymnExec("xh1", "--", "sh", "-c", "exit 7"); code != 7 {
		t.Errorf("exec h1 -- sh -c 'exit 7': exit %d, %q", code, out)
	}
	if code, out := hymnExec("-c", "echo $((6*7)) | tr 4 x; exit 3", "xh1"); code != 3 || out != "x2\n" {
		t.Errorf("exec -c LINE h1: exit %d, %q", code, out)
	}
	// A VM node (its run directory beside its helper namespace) is
	// refused: the namespace is the helper's, not the guest's.
	vmDir := filepath.Join(vm.RunBase, owner.NamespaceName(net.RunID(), "xh2"))
	if err := os.MkdirAll(vmDir, 0o700); err != nil {
		t.Fatal(err)
	}
	code, out := hymnExec("xh2", "true")
	if err := os.Remove(vmDir); err != nil {
		t.Error(err)
	}
	if code != 2 || !strings.Contains(out, "node xh2 is a VM: its commands run in the guest") {
		t.Errorf("exec on a VM node: exit %d, %q", code, out)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"xh9", "true"}, "no running hymn network has a node xh9"},
		{[]string{"--run", net.RunID(), "h9", "true"}, "run " + net.RunID() + " has no node h9 (it has s1 xh1 xh2)"},
		{[]string{"--run", "../x", "h1", "true"}, "is not a run id"},
		{[]string{"@emu", "true"}, "is not a node name"},
		{[]string{"xh1", "no-such-program-here"}, "no-such-program-here"},
		{nil, "requires at least 1 arg"},
		{[]string{"-c", "true", "xh1", "ls"}, "give -c LINE or a COMMAND, not both"},
	} {
		code, out := hymnExec(c.args...)
		if code != 2 || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") > 0 {
			t.Errorf("exec %v: exit %d, %q; want 2 and one line with %q", c.args, code, out, c.want)
		}
	}
}
