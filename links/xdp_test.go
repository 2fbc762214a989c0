package links

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"testing"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/testenv"
)

// testNamespace creates a named namespace that t's cleanup deletes.
func testNamespace(t *testing.T, name string) *netnsx.Named {
	t.Helper()
	n, err := netnsx.CreateNamed(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Delete(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// TestRedirectXDP: a ─ [xa  x  xb] ─ b with nothing joining xa and xb:
// a cannot reach b until XDP programs redirect xa to xb and back.
func TestRedirectXDP(t *testing.T) {
	testenv.RootAndTools(t, "ip", "ping")
	prefix := fmt.Sprintf("hymntest-xdp%d-", os.Getpid())
	a, b, x := testNamespace(t, prefix+"a"), testNamespace(t, prefix+"b"), testNamespace(t, prefix+"x")
	if _, err := CreateVeth(End{NS: a, Name: "a0", IP: netip.MustParsePrefix("10.202.0.1/24")}, End{NS: x, Name: "xa"}); err != nil {
		t.Fatal(err)
	}
	if _, err := CreateVeth(End{NS: b, Name: "b0", IP: netip.MustParsePrefix("10.202.0.2/24")}, End{NS: x, Name: "xb"}); err != nil {
		t.Fatal(err)
	}
	ping := func() error {
		out, err := exec.Command("ip", "netns", "exec", a.Namespace(), "ping", "-c", "2", "-i", "0.2", "-W", "1", "10.202.0.2").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	if ping() == nil {
		t.Fatal("a reached b with nothing between xa and xb")
	}
	for _, d := range [][2]string{{"xa", "xb"}, {"xb", "xa"}} {
		if err := RedirectXDP(x, d[0], d[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := ping(); err != nil {
		t.Fatalf("a -> b through the XDP redirects: %v", err)
	}
	if err := RedirectXDP(x, "xa", "nonexistent"); err == nil {
		t.Error("a redirect to a device that does not exist was accepted")
	}
}
