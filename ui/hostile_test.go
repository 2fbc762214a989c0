package ui_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/ui"
)

// TestHostileLinkEmu sends the live view's link action with parameters
// that name host files, as anyone holding the view's URL could, through
// ui.Handler: the handler the view serves and that a split network's
// worker runs for the coordinator's "api" requests. Each is refused with
// one line naming the key, the same line whatever the file (existing,
// secret, missing, a FIFO), so the answer carries no content and is no
// existence oracle; the link keeps its configuration.
func TestHostileLinkEmu(t *testing.T) {
	testenv.Root(t)
	dir := t.TempDir()
	secret := filepath.Join(dir, "shadow")
	if err := os.WriteFile(secret, []byte("root:$y$j9T$SECRETHASH:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	net := hymntest.Start(t, hymntest.Topo(t, "single,2"), hymn.Options{})
	h, closeIt, err := ui.Handler(net, ui.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeIt)
	post := func(params string) (int, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]string{"node1": "h1", "node2": "s1", "dir": "a>b", "params": params})
		req := httptest.NewRequest(http.MethodPost, "/api/link/emu", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var v struct{ Error string }
		_ = json.Unmarshal(rec.Body.Bytes(), &v) // judged by the caller
		return rec.Code, v.Error
	}
	if code, msg := post("delay=3ms"); code != 200 {
		t.Fatalf("a plain change: %d %s", code, msg)
	}
	const refusal = "trace: a file name is not accepted from the live view"
	var first string
	for _, c := range []struct{ name, params string }{
		{"shadow", "trace=/etc/shadow"},
		{"secret", "trace=" + secret},
		{"missing", "trace=/nonexistent/file"},
		{"fifo", "trace=" + fifo},
		{"relative", "trace=../../etc/shadow"},
		{"beside others", "delay=9ms trace=" + secret},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, msg := post(c.params)
			if code != http.StatusBadRequest || !strings.Contains(msg, refusal) {
				t.Fatalf("%s: %d %q, want 400 with %q", c.params, code, msg, refusal)
			}
			for _, leak := range []string{"root:", "SECRETHASH", "no such file", "not a regular file", "FIFO", "permission"} {
				if strings.Contains(msg, leak) {
					t.Fatalf("%s: the answer %q reveals %q", c.params, msg, leak)
				}
			}
			if strings.Contains(msg, "\n") {
				t.Fatalf("%s: more than one line: %q", c.params, msg)
			}
			// Identical whatever the file: nothing was looked at.
			rest := strings.Replace(msg, c.params, "", 1)
			if first == "" {
				first = rest
			} else if rest != first {
				t.Fatalf("%s: %q differs from the first refusal %q", c.params, rest, first)
			}
		})
	}
	st, err := net.LinkStats("h1", "s1")
	if err != nil || !strings.HasPrefix(st.ForwardConfig.String(), "delay 3ms") {
		t.Fatalf("the refused changes changed the link: %v (%v)", st.ForwardConfig, err)
	}
	// The local user's Go API still reads the file they name.
	if err := net.SetLinkParams("h1", "s1", hymn.Forward, "trace="+secret); err == nil || !strings.Contains(err.Error(), secret+":1:") {
		t.Fatalf("a local trace file was not read: %v", err)
	}
}
