package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

// asMN runs f with os.Args[0] ending in /mn, as a symlink named mn does.
func asMN(t *testing.T) {
	t.Helper()
	old := os.Args[0]
	os.Args[0] = filepath.Join(t.TempDir(), "mn")
	t.Cleanup(func() { os.Args[0] = old })
}

func TestMNModeUsage(t *testing.T) {
	asMN(t)
	code, stdout, _ := run(t, "-h")
	if code != 0 || !strings.HasPrefix(stdout, "Usage: mn [options]\n") {
		t.Fatalf("mn -h: exit %d:\n%s", code, stdout)
	}
	// Every option of Mininet 2.3's mn -h, in its order.
	var want []string
	for _, f := range []string{"-h, --help", "--switch=SWITCH", "--host=HOST", "--controller=CONTROLLER", "--link=LINK",
		"--topo=TOPO", "-c, --clean", "--custom=CUSTOM", "--test=TEST", "-x, --xterms", "-i IPBASE, --ipbase=IPBASE",
		"--mac", "--arp", "-v VERBOSITY, --verbosity=VERBOSITY", "--innamespace", "--listenport=LISTENPORT",
		"--nolistenport", "--pre=PRE", "--post=POST", "--pin", "--nat", "--version", "-w, --wait", "-t WAIT, --twait=WAIT",
		"--cluster=server1,server2...", "--placement=block|random"} {
		want = append(want, regexp.QuoteMeta(f))
	}
	if !regexp.MustCompile(`(?s)` + strings.Join(want, ".*")).MatchString(stdout) {
		t.Errorf("mn -h lacks Mininet's options in order:\n%s", stdout)
	}
	if MNMode() != true {
		t.Error("MNMode is false under the name mn")
	}
}

// TestMNModeUsageMatchesMininet compares with Debian's mn -h where it is
// installed: the same lines up to hymn's additions.
func TestMNModeUsageMatchesMininet(t *testing.T) {
	testenv.Tools(t, "mn")
	out, err := exec.Command("mn", "-h").Output()
	if err != nil {
		t.Fatalf("mn -h: %v", err)
	}
	asMN(t)
	_, stdout, _ := run(t, "-h")
	if !strings.HasPrefix(stdout, string(out)) {
		t.Errorf("hymn as mn -h differs from Mininet's:\n--- Mininet\n%s\n--- hymn\n%s", out, stdout)
	}
}

func TestParseSwitchSpec(t *testing.T) {
	testenv.Tools(t, "ovs-vswitchd", "ovsdb-server")
	lg := mnlog.New(&strings.Builder{}, mnlog.Warning)
	for spec, openFlow := range map[string]bool{"ovsk": true, "ovs": true, "default": true, "user": true, "lxbr": false, "ovsbr": false} {
		c, err := parseSwitchSpec(spec, false, lg)
		if err != nil || c.openFlow != openFlow {
			t.Errorf("%s: %+v %v", spec, c, err)
		}
	}
	c, err := parseSwitchSpec("ovsk,failMode=standalone,protocols=OpenFlow13,stp=1,datapath=user", false, lg)
	if err != nil || c.failMode != "standalone" || c.protocols != "OpenFlow13" || !c.stp {
		t.Errorf("options: %+v %v", c, err)
	}
	for _, bad := range []string{"ovsk,failMode=open", "ovsk,protocols=OpenFlow99", "lxbr,failMode=secure", "ivs", "nope", "ovsk,datapath=magic"} {
		if _, err := parseSwitchSpec(bad, false, lg); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if _, err := parseSwitchSpec("lxbr", true, lg); err == nil {
		t.Error("--innamespace with a Linux bridge accepted")
	}
	var warn strings.Builder
	if _, err := parseSwitchSpec("user", true, mnlog.New(&warn, mnlog.Warning)); err != nil || strings.Count(warn.String(), "\n") != 2 {
		t.Errorf("user + --innamespace: %v, notices %q", err, warn.String())
	}
}

func TestParseControllers(t *testing.T) {
	testenv.Tools(t, "ovs-testcontroller")
	of := switchChoice{openFlow: true}
	empty := topo.New()
	cs, err := parseControllers(nil, of, empty)
	if err != nil || len(cs) != 1 || cs[0].Name != "c0" || cs[0].Kind != "default" {
		t.Errorf("OpenFlow default: %+v %v", cs, err)
	}
	if cs, _ := parseControllers(nil, switchChoice{}, empty); len(cs) != 0 {
		t.Errorf("Linux bridges got controllers: %+v", cs)
	}
	cs, err = parseControllers([]string{"remote,ip=127.0.0.1,port=6633", "ovsc", "none"}, of, empty)
	if err != nil || len(cs) != 2 || cs[0].Kind != "remote" || cs[0].Port != 6633 || cs[1].Name != "c1" {
		t.Errorf("remote+ovsc: %+v %v", cs, err)
	}
	withOwn := topo.New()
	withOwn.AddController("c0", topo.Params{"kind": "ovsc"})
	if cs, _ := parseControllers(nil, of, withOwn); len(cs) != 0 {
		t.Errorf("a topology with its own controller got the default too: %+v", cs)
	}
	if cs, _ := parseControllers([]string{"ref"}, of, withOwn); len(cs) != 1 || cs[0].Name != "c1" {
		t.Errorf("names after the topology's: %+v", cs)
	}
	for _, bad := range []string{"nox", "remote,port=x", "ref,ip=10.0.0.9"} {
		if _, err := parseControllers([]string{bad}, of, empty); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestMNModeDefaultNetwork is the drop-in check: run as mn, -w,
// then nodes lists the controller.
func TestMNModeDefaultNetwork(t *testing.T) {
	testenv.RootAndTools(t, "ovs-vswitchd", "ovsdb-server", "ovs-testcontroller")
	asMN(t)
	in := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(in, []byte("nodes\ndump\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }() // read-only
	var out, errOut strings.Builder
	code := Execute(t.Context(), []string{"-w"}, f, &out, &errOut)
	if code != 0 || !strings.Contains(errOut.String(), "available nodes are: \nc0 h1 h2 s1\n") {
		t.Errorf("exit %d:\n%s", code, errOut.String())
	}
	if !regexp.MustCompile(`<OVSController c0: 127\.0\.0\.\d+:\d+ pid=\d+> `).MatchString(errOut.String()) ||
		!strings.Contains(errOut.String(), "<OVSSwitch s1: lo:127.0.0.1,s1-eth1:None,s1-eth2:None pid=") {
		t.Errorf("dump:\n%s", errOut.String())
	}
}

func TestMNModeDebugNamesEverything(t *testing.T) {
	testenv.RootAndTools(t, "ovs-vswitchd", "ovsdb-server", "ovs-testcontroller")
	asMN(t)
	code, _, stderr := run(t, "-v", "debug", "--test", "none")
	lines := strings.Count(stderr, "\n")
	if code != 0 || lines <= 70 {
		t.Errorf("mn -v debug --test none: exit %d, %d lines:\n%s", code, lines, stderr)
	}
	for _, want := range []string{"ip netns add", "ip link add h1-eth0", "ip addr add 10.0.0.1/8 dev h1-eth0", "ovs-vswitchd started", "ovs-testcontroller ptcp:", "ip netns del"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("debug output lacks %q", want)
		}
	}
}
