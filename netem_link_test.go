package hymn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
)

// NetEm's duplicate and ecn on a real emulated link, given as link
// parameters (the table's keys) and changed live: ping reports every echo
// twice, then ECN-capable pings cross a link that loses every packet,
// marked instead of dropped.
func TestNetemOnLink(t *testing.T) {
	testenv.Root(t)
	n := pairNet(t, topo.Params{"duplicate": "100", "seed": "1"})
	ip, _ := n.IP("h2")
	h1, err := n.Node("h1")
	if err != nil {
		t.Fatal(err)
	}
	ping := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := h1.Exec(ctx, "ping", append(args, "-c", "3", "-i", "0.2", "-W", "2", ip.String())...)
		if err != nil {
			t.Fatal(err)
		}
		return string(res.Stdout)
	}
	// Both directions duplicate: each echo request arrives twice, and
	// each of the two replies twice.
	if out := ping(); !strings.Contains(out, "DUP!") || !strings.Contains(out, " 0% packet loss") {
		t.Errorf("duplicate 100%%: %s", out)
	}
	if err := n.SetLinkParams("h1", "h2", BothDirections, "duplicate=0 loss=100 ecn=true"); err != nil {
		t.Fatal(err)
	}
	if out := ping("-Q", "1"); !strings.Contains(out, " 0% packet loss") || strings.Contains(out, "DUP!") {
		t.Errorf("ECT pings across loss 100%% ecn: %s", out)
	}
	if out := ping(); !strings.Contains(out, "100% packet loss") {
		t.Errorf("not-ECT pings across loss 100%% ecn: %s", out)
	}
	st, err := n.LinkStats("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	if st.Forward.Emulator.Marked < 3 || st.Forward.Emulator.Lost < 3 {
		t.Errorf("h1→h2: marked %d, lost %d", st.Forward.Emulator.Marked, st.Forward.Emulator.Lost)
	}
}
