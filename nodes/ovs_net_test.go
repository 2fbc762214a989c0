package nodes

import (
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestDefaultDPID(t *testing.T) {
	for _, c := range []struct{ name, dpid, want string }{
		{"s1", "", "0000000000000001"},
		{"s10", "", "000000000000000a"},
		{"s2x3", "", "0000000000000002"}, // Mininet takes the first number
		{"s1", "00:00:00:00:00:00:00:2A", "000000000000002a"},
		{"s1", "ff", "00000000000000ff"},
	} {
		t.Run(dpidCase(c.name, c.dpid), func(t *testing.T) {
			t.Parallel()
			if got, err := DefaultDPID(c.name, c.dpid); err != nil || got != c.want {
				t.Errorf("%q %v, want %q", got, err, c.want)
			}
		})
	}
	for _, c := range [][2]string{{"switch", ""}, {"s1", "xyz"}, {"s1", "11112222333344445"}} {
		t.Run("invalid "+dpidCase(c[0], c[1]), func(t *testing.T) {
			t.Parallel()
			if _, err := DefaultDPID(c[0], c[1]); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// dpidCase names a DefaultDPID case: the switch, and the dpid if given.
func dpidCase(name, dpid string) string {
	if dpid == "" {
		return name
	}
	return name + " dpid=" + dpid
}

// TestRelaySpreadsSwitches: each switch connection goes to the least busy
// of the controller's processes, and counts as connected at its features
// reply.
func TestRelaySpreadsSwitches(t *testing.T) {
	var targets []string
	accepted := make(chan string, 8)
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := ln.Close(); err != nil {
				t.Error(err)
			}
		}()
		addr := ln.Addr().String()
		targets = append(targets, addr)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				accepted <- addr
				go func() { _, _ = io.Copy(io.Discard, c) }() // until the relay closes it
			}
		}()
	}
	sock := filepath.Join(t.TempDir(), "c0.sock")
	r, err := newRelay("c0", sock, targets, nil, nil, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	seen := map[string]int{}
	for range 4 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		}()
		// An OpenFlow 1.0 features reply.
		if _, err := c.Write([]byte{1, 6, 0, 8, 0, 0, 0, 1}); err != nil {
			t.Fatal(err)
		}
		select {
		case a := <-accepted:
			seen[a]++
		case <-time.After(5 * time.Second):
			t.Fatal("the relay did not connect")
		}
	}
	if seen[targets[0]] != 2 || seen[targets[1]] != 2 {
		t.Errorf("connections per process: %v", seen)
	}
	for deadline := time.Now().Add(5 * time.Second); r.answered.Load() < 4 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if got := r.answered.Load(); got != 4 {
		t.Errorf("%d connections counted as connected, want 4", got)
	}
}

// TestRelayGrowsWhenFull: when every process serves 16 switches, the next
// switch makes the relay start one more process (once, however many
// switches connect at the same time) and goes to it.
func TestRelayGrowsWhenFull(t *testing.T) {
	var mu sync.Mutex
	accepted := map[string]int{}
	listen := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := ln.Close(); err != nil {
				t.Error(err)
			}
		})
		addr := ln.Addr().String()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				accepted[addr]++
				mu.Unlock()
				go func() { _, _ = io.Copy(io.Discard, c) }() // until the relay closes it
			}
		}()
		return addr
	}
	first := listen()
	var grown []string
	grow := func() (string, error) {
		addr := listen()
		mu.Lock()
		grown = append(grown, addr)
		mu.Unlock()
		return addr, nil
	}
	sock := filepath.Join(t.TempDir(), "c0.sock")
	r, err := newRelay("c0", sock, []string{first}, grow, nil, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	dial := func() {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(func() {
			if err := c.Close(); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor := func(n int) {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			got := accepted[first]
			if len(grown) > 0 {
				got += accepted[grown[0]]
			}
			mu.Unlock()
			if got == n {
				return
			}
		}
		t.Fatalf("the relay did not connect %d switches: %v", n, accepted)
	}
	for range maxSwitchesPerProcess {
		dial()
	}
	waitFor(maxSwitchesPerProcess)
	if len(grown) != 0 {
		t.Fatalf("a process was started for %d switches", maxSwitchesPerProcess)
	}
	// Four more at once: one new process takes them all.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(dial)
	}
	wg.Wait()
	waitFor(maxSwitchesPerProcess + 4)
	mu.Lock()
	defer mu.Unlock()
	if len(grown) != 1 || accepted[first] != maxSwitchesPerProcess || accepted[grown[0]] != 4 {
		t.Errorf("processes started %v; connections per process %v", grown, accepted)
	}
}

// TestOfportRequest: a port named SWITCH-ethN asks for OpenFlow port N,
// Mininet's number; other names ask for none.
func TestOfportRequest(t *testing.T) {
	for intf, want := range map[string]string{
		"s1-eth1": "ofport_request=1", "s1-eth12": "ofport_request=12", "s10-eth3": "",
		"s1-eth0": "", "s1-eth01": "", "s1-ethx": "", "s1-eth": "", "eth1": "", "s1-eth65280": "", "s1-eth65279": "ofport_request=65279",
	} {
		got := ofportRequest("s1", intf)
		if want == "" && got != nil || want != "" && (len(got) != 5 || got[4] != want || got[3] != intf) {
			t.Errorf("%s: %q, want %q", intf, got, want)
		}
	}
}
