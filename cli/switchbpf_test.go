package cli

import (
	"encoding/json"
	"io"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/mnlog"
)

// deadRunNamespaces lists the hymn namespaces whose run has ended: what a
// run left behind.
func deadRunNamespaces(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, " ")
		if run, ok := owner.RunOfNamespace(name); ok && !owner.Alive(run) {
			left = append(left, name)
		}
	}
	return left
}

// --switch bpf: Mininet's tests pass on BPF switches, JSON included.
func TestMNBPFSwitch(t *testing.T) {
	testenv.Root(t)
	for spec, want := range map[string]string{
		"single,3": "*** Results: 0% dropped (6/6 received)\n",
		"linear,4": "*** Results: 0% dropped (12/12 received)\n",
	} {
		code, _, stderr := run(t, "--switch", "bpf", "--topo", spec, "--test", "pingall")
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("hymn --switch bpf --topo %s --test pingall: exit %d, want %q in:\n%s", spec, code, want, stderr)
		}
	}
	code, stdout, stderr := run(t, "--switch", "bpf", "--topo", "linear,2", "--test", "pingall", "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &res) != nil || !strings.Contains(stdout, `"pingall"`) {
		t.Errorf("--json: exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	if left := deadRunNamespaces(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// STP on a BPF switch is a usage error, said in one line.
func TestMNBPFSwitchSTP(t *testing.T) {
	for _, spec := range []string{"bpf,stp=1", "bpf,stp=true"} {
		code, _, stderr := run(t, "--switch", spec, "--topo", "linear,2", "--test", "build")
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "STP needs --switch lxbr or ovsbr") {
			t.Errorf("--switch %s: exit %d, stderr %q", spec, code, stderr)
		}
	}
	if code, _, stderr := run(t, "--switch", "bpf,foo=1", "--topo", "linear,2", "--test", "build"); code != 2 || !strings.Contains(stderr, `unknown option "foo"`) {
		t.Errorf("--switch bpf,foo=1: exit %d, stderr %q", code, stderr)
	}
	lg := mnlog.New(io.Discard, mnlog.Info)
	if _, err := parseSwitchSpec("bpf,stp=1", false, lg); err == nil {
		t.Error("parseSwitchSpec took bpf,stp=1")
	}
	for _, spec := range []string{"bpf", "bpf,stp=0"} { // STP off is what a bpf switch does
		if c, err := parseSwitchSpec(spec, false, lg); err != nil || c.kind != hymn.SwitchBPF || c.stp {
			t.Errorf("parseSwitchSpec(%s) = %+v, %v", spec, c, err)
		}
	}
}

// The shell on BPF switches: net, dump, links, dpctl showmacs, a host and
// a link added live, link down and up; nothing left after exit.
func TestShellBPFSwitch(t *testing.T) {
	s := startSession(t, "--switch", "bpf", "--topo", "single,2")
	s.expect(`mininet> `, 60*time.Second)
	out := s.command("net")
	for _, line := range []string{"h1 h1-eth0:s1-eth1\n", "s1 lo:  s1-eth1:h1-eth0 s1-eth2:h2-eth0\n"} {
		if !strings.Contains(out, line) {
			t.Errorf("net lacks %q: %q", line, out)
		}
	}
	if out := s.command("dump"); !regexp.MustCompile(`<BPFSwitch s1: lo:127.0.0.1,s1-eth1:None,s1-eth2:None pid=\d+> `).MatchString(out) {
		t.Errorf("dump: %q", out)
	}
	if out := s.command("links"); !strings.Contains(out, "h1-eth0<->s1-eth1 (OK OK)") {
		t.Errorf("links: %q", out)
	}
	if out := s.command("pingall"); !strings.Contains(out, "*** Results: 0% dropped (2/2 received)") {
		t.Errorf("pingall: %q", out)
	}
	out = s.command("dpctl showmacs")
	if n := len(regexp.MustCompile(`s1-eth[12]\t([0-9a-f]{2}:){5}[0-9a-f]{2}\t`).FindAllString(out, -1)); n != 2 {
		t.Errorf("dpctl showmacs shows %d addresses, want 2: %q", n, out)
	}
	if out := s.command("dpctl show"); !strings.Contains(out, "s1 is a bpf switch: dpctl takes showmacs only") {
		t.Errorf("dpctl show: %q", out)
	}
	s.command("px net.addHost('h3')")
	s.command("px net.addLink(s1, h3)")
	if out := s.command("h3 ping -c 1 h1"); !strings.Contains(out, "1 received") {
		t.Errorf("h3 cannot reach h1: %q", out)
	}
	s.command("link s1 h1 down")
	if out := s.command("h1 ping -c 1 -W 1 h2"); strings.Contains(out, " 1 received") {
		t.Errorf("ping over a down link: %q", out)
	}
	s.command("link s1 h1 up")
	if out := s.command("h1 ping -c 1 -W 1 h2"); !strings.Contains(out, " 0% packet loss") {
		t.Errorf("ping after link up: %q", out)
	}
	s.exit()
	if left := deadRunNamespaces(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
