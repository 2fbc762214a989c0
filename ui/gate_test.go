package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestGate checks the gate's refusals without a network: every request
// needs the token, another site's origin is refused, actions need JSON and
// are refused read-only.
func TestGate(t *testing.T) {
	const token = "0123456789abcdef"
	reached := 0
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++; _, _ = io.WriteString(w, "ok") })
	for _, ro := range []bool{false, true} {
		srv := httptest.NewServer(&gate{token: token, readOnly: ro, backend: backend, run: "r"})
		defer srv.Close()
		self := srv.URL
		cases := []struct {
			what, method, path, origin, ctype, header string
			want                                      int
		}{
			{"snapshot without token", "GET", "/api/snapshot", "", "", "", 403},
			{"page without token", "GET", "/", "", "", "", 403},
			{"asset without token", "GET", "/assets/app.js", "", "", "", 403},
			{"wrong token", "GET", "/api/snapshot?token=x" + token[1:], "", "", "", 403},
			{"foreign origin", "GET", "/api/snapshot?token=" + token, "http://evil.example", "", "", 403},
			{"foreign origin, action", "POST", "/api/link/state?token=" + token, "http://evil.example", "application/json", "", 403},
			{"action without token", "POST", "/api/link/state", self, "application/json", "", 403},
			{"snapshot", "GET", "/api/snapshot?token=" + token, "", "", "", 200},
			{"token in a header", "GET", "/api/snapshot", "", "", token, 200},
			{"own origin", "GET", "/api/snapshot?token=" + token, self, "", "", 200},
			{"page", "GET", "/?token=" + token, "", "", "", 200},
			{"asset", "GET", "/assets/app.js?token=" + token, "", "", "", 200},
			{"not an asset", "GET", "/assets/../ui.go?token=" + token, "", "", "", 404},
			{"form post", "POST", "/api/link/state?token=" + token, self, "application/x-www-form-urlencoded", "", map[bool]int{false: 415, true: 403}[ro]},
			{"action", "POST", "/api/link/state?token=" + token, self, "application/json", "", map[bool]int{false: 200, true: 403}[ro]},
		}
		for _, c := range cases {
			req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader("{}"))
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.header != "" {
				req.Header.Set("X-Hymn-Token", c.header)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close() // read already
			if resp.StatusCode != c.want {
				t.Errorf("read-only %v, %s: %d %q, want %d", ro, c.what, resp.StatusCode, body, c.want)
			}
			if c.path == "/?token="+token && !strings.Contains(string(body), `defer src="/assets/app.js?token=`+token+`"`) {
				t.Errorf("page does not load its script with the token: %s", body)
			}
			if resp.Header.Get("Referrer-Policy") != "no-referrer" {
				t.Errorf("%s: Referrer-Policy %q: the token could leak", c.what, resp.Header.Get("Referrer-Policy"))
			}
		}
	}
	if reached == 0 {
		t.Error("no request reached the backend")
	}
}
