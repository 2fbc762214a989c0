package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/hymn-net/hymn/internal/testenv"
)

// session drives the real hymn binary through a pseudo-terminal, as a
// person (or Mininet's pexpect tests) would.
type session struct {
	t    *testing.T
	cmd  *exec.Cmd
	tty  *os.File
	mu   sync.Mutex
	buf  bytes.Buffer
	seen int // consumed prefix of buf
	done chan struct{}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// sharedBinary builds hymn once per test binary.
func sharedBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hymn-e2e-")
		if err != nil {
			binErr = err
			return
		}
		binPath = dir + "/hymn"
		out, err := exec.Command("go", "build", "-o", binPath, "../cmd/hymn").CombinedOutput()
		if err != nil {
			binErr = err
			t.Logf("%s", out)
		}
	})
	if binErr != nil {
		t.Fatalf("building hymn: %v", binErr)
	}
	return binPath
}

func startSession(t *testing.T, args ...string) *session {
	t.Helper()
	return startSessionOf(t, sharedBinary(t), args...)
}

// startSessionOf runs bin (hymn, or a link to it named mn) in a session.
func startSessionOf(t *testing.T, bin string, args ...string) *session {
	t.Helper()
	testenv.Root(t)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TERM=dumb")
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, cmd: cmd, tty: tty, done: make(chan struct{})}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := tty.Read(b)
			s.mu.Lock()
			s.buf.Write(b[:n])
			s.mu.Unlock()
			if err != nil {
				close(s.done)
				return
			}
		}
	}()
	// The shell may have ended already: killing it, its exit status and
	// closing the terminal (which ends the reader above) report nothing
	// the test judges.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = tty.Close()
	})
	return s
}

// expect waits until the output after what was consumed matches re, and
// consumes up to the end of the match; it returns the text before it.
func (s *session) expect(re string, timeout time.Duration) string {
	s.t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(timeout)
	for {
		s.mu.Lock()
		text := s.buf.String()[s.seen:]
		if loc := rx.FindStringIndex(text); loc != nil {
			s.seen += loc[1]
			s.mu.Unlock()
			return text[:loc[1]]
		}
		s.mu.Unlock()
		select {
		case <-s.done:
			s.mu.Lock()
			text = s.buf.String()[s.seen:]
			s.mu.Unlock()
			if loc := rx.FindStringIndex(text); loc != nil {
				continue
			}
			s.t.Fatalf("hymn ended before %q appeared; output:\n%s", re, text)
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %q; output:\n%s", re, text)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *session) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.tty, line+"\r"); err != nil {
		s.t.Fatal(err)
	}
}

// command sends a line at the prompt and returns its output up to the next
// prompt.
func (s *session) command(line string) string {
	s.t.Helper()
	s.send(line)
	out := s.expect(`(^|\n)mininet> $`, 60*time.Second)
	return strings.ReplaceAll(out, "\r", "")
}

func (s *session) exit() {
	s.t.Helper()
	s.send("exit")
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Fatal("hymn did not exit after exit")
	}
	if code := s.cmd.Wait(); code != nil {
		s.t.Errorf("hymn exited with %v", code)
	}
}

// The walkthrough's testHelp, testBasic, testHostCommands, testConnectivity,
// testPythonInterpreter and testLink in one session.
func TestShellWalkthrough(t *testing.T) {
	s := startSession(t)
	s.expect(`mininet> `, 60*time.Second)

	if out := s.command("help"); !strings.Contains(out, "commands") {
		t.Errorf("help: %q", out)
	}
	if out := s.command("nodes"); !regexp.MustCompile(`available nodes are: \n(h1 h2 s1)\n`).MatchString(out) {
		t.Errorf("nodes: %q", out)
	}
	out := s.command("net")
	for _, line := range []string{"h1 h1-eth0:s1-eth1\n", "h2 h2-eth0:s1-eth2\n", "s1 lo:  s1-eth1:h1-eth0 s1-eth2:h2-eth0\n"} {
		if !strings.Contains(out, line) {
			t.Errorf("net lacks %q: %q", line, out)
		}
	}
	// hymn's default switch for this topology is the eBPF switch (Mininet's
	// LinuxBridge repr under --switch lxbr is compared in tests/compat).
	out = s.command("dump")
	for _, re := range []string{`<Host h1: h1-eth0:10.0.0.1 pid=\d+> `, `<Host h2: h2-eth0:10.0.0.2 pid=\d+> `, `<BPFSwitch s1: lo:127.0.0.1,s1-eth1:None,s1-eth2:None pid=\d+> `} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("dump lacks %s: %q", re, out)
		}
	}
	out = s.command("h1 ifconfig -a")
	intfs := regexp.MustCompile(`(?m)^([\w-]+): flags`).FindAllStringSubmatch(out, -1)
	var names []string
	for _, m := range intfs {
		names = append(names, m[1])
	}
	if strings.Join(names, " ") != "h1-eth0 lo" {
		t.Errorf("h1 ifconfig -a shows %v, want h1-eth0 and lo only:\n%s", names, out)
	}
	if out := s.command("h1 ping -c 1 h2"); !strings.Contains(out, "1 packets transmitted, 1 received") {
		t.Errorf("h1 ping -c 1 h2: %q", out)
	}
	if out := s.command("pingall"); !strings.Contains(out, "*** Results: 0% dropped (2/2 received)") {
		t.Errorf("pingall: %q", out)
	}

	if out := s.command("py h1.IP()"); !strings.Contains(out, "10.0.0.1\n") {
		t.Errorf("py h1.IP(): %q", out)
	}
	s.command("px net.addHost('h3')")
	s.command("px net.addLink(s1, h3)")
	if out := s.command("net"); !strings.Contains(out, "h3 h3-eth0:s1-eth3") {
		t.Errorf("net after addHost/addLink: %q", out)
	}
	if out := s.command("py h3.MAC()"); !regexp.MustCompile(`([0-9a-f]{2}:){5}[0-9a-f]{2}`).MatchString(out) {
		t.Errorf("py h3.MAC(): %q", out)
	}
	if out := s.command("h3 ping -c 1 h1"); !strings.Contains(out, "1 received") {
		t.Errorf("h3 cannot reach h1: %q", out)
	}
	s.command("px net.delHost(h3)")
	if out := s.command("net"); strings.Contains(out, "h3") {
		t.Errorf("net after delHost(h3): %q", out)
	}
	if out := s.command("nodes"); strings.Contains(out, "h3") {
		t.Errorf("nodes after delHost(h3): %q", out)
	}

	s.command("link s1 h1 down")
	if out := s.command("h1 ping -c 1 h2"); !strings.Contains(out, "unreachable") {
		t.Errorf("ping over a down link: %q", out)
	}
	s.command("link s1 h1 up")
	ok := false
	for try := 0; try < 5 && !ok; try++ {
		ok = strings.Contains(s.command("h1 ping -c 1 -W 1 h2"), " 0% packet loss")
	}
	if !ok {
		t.Error("ping after link up never had 0% packet loss")
	}
	if out := s.command("bogus"); !strings.Contains(out, "*** Unknown command: bogus") {
		t.Errorf("unknown command: %q", out)
	}
	if out := s.command("h1"); !strings.Contains(out, "*** Please enter a command for node: h1 <cmd>") {
		t.Errorf("node alone: %q", out)
	}
	s.exit()
}

// Ctrl-C interrupts the node command, not the shell.
func TestShellCtrlC(t *testing.T) {
	s := startSession(t, "--topo", "single,2")
	s.expect(`mininet> `, 60*time.Second)
	s.send("h1 ping h2")
	s.expect(`icmp_seq=2`, 20*time.Second)
	if _, err := io.WriteString(s.tty, "\x03"); err != nil {
		t.Fatal(err)
	}
	s.expect(`mininet> `, 10*time.Second)
	if out := s.command("nodes"); !strings.Contains(out, "h1 h2 s1") {
		t.Errorf("shell broken after Ctrl-C: %q", out)
	}
	// Ctrl-C at the prompt prints Interrupt and keeps the shell.
	if _, err := io.WriteString(s.tty, "\x03"); err != nil {
		t.Fatal(err)
	}
	s.expect(`Interrupt`, 10*time.Second)
	s.expect(`mininet> `, 10*time.Second)
	// Ctrl-D ends it cleanly.
	if _, err := io.WriteString(s.tty, "\x04"); err != nil {
		t.Fatal(err)
	}
	s.expect(`\*\*\* Done`, 30*time.Second)
	<-s.done
}

// testStaticMAC and testVerbosity of the walkthrough.
func TestShellStaticMACAndVerbosity(t *testing.T) {
	s := startSession(t, "--mac", "-v", "output")
	before := s.expect(`mininet> `, 60*time.Second)
	if strings.TrimSpace(strings.TrimSuffix(before, "mininet> ")) != "" {
		t.Errorf("-v output printed before the prompt: %q", before)
	}
	for _, h := range []string{"h1", "h2"} {
		out := s.command(h + " ifconfig")
		want := "00:00:00:00:00:0" + h[1:]
		if !strings.Contains(out, want) {
			t.Errorf("%s ifconfig lacks %s:\n%s", h, want, out)
		}
	}
	s.exit()
}

// Commands from a pipe and from --pre/--post scripts.
func TestShellFromPipeAndScripts(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	pre, post := dir+"/pre", dir+"/post"
	if err := os.WriteFile(pre, []byte("h1 echo PRE-$((1+1))\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(post, []byte("h2 echo POST-$((2+2))\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sharedBinary(t), "--pre", pre, "--post", post)
	cmd.Stdin = strings.NewReader("nodes\nh1 echo h2 # a comment\nsource " + pre + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"PRE-2", "available nodes are: \nh1 h2 s1\n", "mininet> 10.0.0.2\n", "POST-4", "*** Done"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(string(out), "PRE-2") != 2 {
		t.Errorf("source did not rerun the pre script:\n%s", out)
	}
}

// TestMain removes the hymn binary the end-to-end tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		if err := os.RemoveAll(filepath.Dir(binPath)); err != nil {
			fmt.Fprintln(os.Stderr, "cli tests:", err)
		}
	}
	os.Exit(code)
}
