package linkparams

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// spyFiles counts what a resolver is asked, to show that a remote
// request resolves nothing but through the Files it was given.
type spyFiles struct {
	topo.Files
	asked []string
}

func (s *spyFiles) Path(key, name string) (string, error) {
	s.asked = append(s.asked, key+"="+name)
	return s.Files.Path(key, name)
}

// Parameters from outside that name a host file are refused with one line
// naming the key, identical for every file (so no content and no
// existence oracle), and the configuration stays as it was. The same
// parameters from the local user read the file.
func TestRemoteFileNamesRefused(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "shadow")
	if err := os.WriteFile(secret, []byte("root:SECRETHASH:19000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const want = "invalid link parameters: trace: a file name is not accepted from the live view; give it in a topology file or on the command line of the machine that runs the network"
	for _, c := range []struct{ name, params string }{
		{"shadow", "trace=/etc/shadow"},
		{"secret", "trace=" + secret},
		{"missing", "trace=/nonexistent"},
		{"fifo", "trace=" + fifo},
		{"relative", "trace=shadow"},
		{"with others", "delay=5ms trace=" + secret},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, files := range []topo.Files{topo.RemoteFiles("the live view"), nil} {
				spy := &spyFiles{Files: topo.RemoteFiles("the live view")}
				use := topo.Files(spy)
				if files == nil {
					use = nil
				}
				c0 := emulator.DefaultConfig()
				c0.Delay = 1e6
				cfg := c0
				err := ChangeFrom(&cfg, c.params, use)
				if err == nil || !errors.Is(err, ErrInvalid) || !errors.Is(err, topo.ErrFileRefused) {
					t.Fatalf("%s: %v", c.params, err)
				}
				msg := err.Error()
				if files == nil {
					msg = strings.Replace(msg, "remote input", "the live view", 1)
				}
				if msg != want {
					t.Fatalf("%s: got\n%s\nwant\n%s", c.params, msg, want)
				}
				if cfg != c0 {
					t.Fatalf("%s: the configuration changed to %v", c.params, cfg)
				}
				if files != nil && len(spy.asked) != 1 {
					t.Fatalf("%s: the resolver was asked %v", c.params, spy.asked)
				}
			}
			if _, _, err := ConfigsFrom(topo.Params{"a>b.trace": strings.TrimPrefix(c.params, "trace=")}, topo.RemoteFiles("a Topology resource")); err == nil ||
				!strings.Contains(err.Error(), "trace: a file name is not accepted from a Topology resource") {
				t.Fatalf("ConfigsFrom %s: %v", c.params, err)
			}
		})
	}
	// The local user's request reads the file: its error names the line,
	// not its content.
	cfg := emulator.DefaultConfig()
	err := Change(&cfg, "trace="+secret)
	if err == nil || !strings.Contains(err.Error(), secret+":1: not a time in whole milliseconds") || strings.Contains(err.Error(), "SECRET") {
		t.Fatalf("local trace: %v", err)
	}
	// Inline schedules are the requester's own text: allowed from anywhere.
	if _, err := LoadSchedule(nil, "schedule", "time,delay;0,5;1s,10"); err != nil {
		t.Fatalf("inline schedule from remote input: %v", err)
	}
	if _, err := LoadSchedule(nil, "schedule", secret); err == nil || !strings.HasPrefix(err.Error(), "schedule: a file name is not accepted from remote input") {
		t.Fatalf("schedule file from remote input: %v", err)
	}
}
