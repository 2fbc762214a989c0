package capture

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/pcapgo"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/testenv"
)

// TestLoopbackLimit captures UDP on lo in a namespace of its own, reads
// the file back with pcapgo and checks the byte limit, the direction
// filter (lo shows each packet going out and coming in) and nanosecond
// stamps.
func TestLoopbackLimit(t *testing.T) {
	testenv.Root(t)
	ns, err := netnsx.CreateNamed("captest-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
	})
	in := func(fn func() error) error { return netnsx.Do(ns.NsHandle(), fn) }
	f := filepath.Join(t.TempDir(), "lo.pcapng")
	c, err := Start(Config{File: f, Limit: 10 * 1000, Taps: []Tap{{In: in, Interface: "lo", Direction: Outgoing}}})
	if err != nil {
		t.Fatal(err)
	}
	// A listener, so no ICMP port-unreachable joins the capture.
	var conn net.Conn
	var sink net.PacketConn
	if err := in(func() (err error) {
		if sink, err = net.ListenPacket("udp", "127.0.0.1:9999"); err != nil {
			return err
		}
		conn, err = net.Dial("udp", "127.0.0.1:9999")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Only a sink: nothing is read from it.
	defer func() { _ = sink.Close() }()
	payload := make([]byte, 958) // 1000 B frames: 14 + 20 + 8 + 958
	for range 50 {
		if _, err := conn.Write(payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.Close(); err != nil {
		t.Error(err)
	}
	time.Sleep(50 * time.Millisecond)
	st, err := c.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	t.Logf("%+v", st)
	if st[0].Packets != 10 || st[0].LimitDropped < 40 {
		t.Errorf("limit 10 kB of 1000 B frames: wrote %d, dropped %d by the limit", st[0].Packets, st[0].LimitDropped)
	}
	fh, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = fh.Close() }() // read-only
	r, err := pcapgo.NewNgReader(fh, pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var last time.Time
	for {
		data, ci, err := r.ReadPacketData()
		if err != nil {
			break
		}
		n++
		if len(data) != 1000 || ci.Timestamp.Before(last) || ci.Timestamp.Nanosecond()%1000 == 0 && n > 3 {
			t.Errorf("packet %d: %d B at %v", n, len(data), ci.Timestamp)
		}
		last = ci.Timestamp
	}
	if n != 10 {
		t.Errorf("read %d packets back, want 10", n)
	}
}

func TestBadConfig(t *testing.T) {
	for name, c := range map[string]Config{
		"no file":   {Taps: []Tap{{Interface: "lo"}}},
		"no taps":   {File: "x"},
		"snaplen":   {File: "x", Taps: []Tap{{Interface: "lo"}}, SnapLen: 10},
		"bad iface": {File: filepath.Join(t.TempDir(), "x"), Taps: []Tap{{Interface: "no-such-if0"}}},
	} {
		if _, err := Start(c); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestFileRefusals: a capture file is created 0600; an earlier capture of
// the same name is replaced (as tcpdump -w does), but a symbolic link,
// another user's file, a FIFO or a hard link is refused and left as it
// was.
func TestFileRefusals(t *testing.T) {
	testenv.Root(t)
	ns, err := netnsx.CreateNamed("capfile-" + strconv.Itoa(os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ns.Delete(); err != nil {
			t.Error(err)
		}
	})
	in := func(fn func() error) error { return netnsx.Do(ns.NsHandle(), fn) }
	dir := t.TempDir()
	start := func(file string) error {
		c, err := Start(Config{File: file, Taps: []Tap{{In: in, Interface: "lo", Direction: Both}}})
		if err == nil {
			_, err = c.Stop()
		}
		return err
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("root's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.pcapng")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	theirs := filepath.Join(dir, "theirs.pcapng")
	if err := os.WriteFile(theirs, []byte("a user's file\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.pcapng")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard.pcapng")
	if err := os.Link(secret, hard); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, file, want string }{
		{"symbolic link", link, "symbolic link"},
		{"another user's file", theirs, "belongs to uid 65534"},
		{"FIFO", fifo, "not a regular file"},
		{"hard link", hard, "hard links"},
	} {
		if err := start(c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want a refusal saying %q", c.what, err, c.want)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "root's secret\n" {
		t.Errorf("the symbolic link's target now holds %q", b)
	}
	if b, _ := os.ReadFile(theirs); string(b) != "a user's file\n" {
		t.Errorf("the other user's file now holds %q", b)
	}

	mine := filepath.Join(dir, "mine.pcapng")
	if err := start(mine); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(mine); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new capture file: %v %v, want mode 0600", st.Mode(), err)
	}
	// An earlier capture, even one made 0644 before, is replaced and
	// made private.
	if err := os.WriteFile(mine, make([]byte, 100000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(mine, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := start(mine); err != nil {
		t.Fatalf("replacing an earlier capture: %v", err)
	}
	if st, err := os.Stat(mine); err != nil || st.Mode().Perm() != 0o600 || st.Size() >= 100000 {
		t.Errorf("replaced capture file: mode %v, %d bytes (%v), want 0600 and a new file's size", st.Mode(), st.Size(), err)
	}
}
