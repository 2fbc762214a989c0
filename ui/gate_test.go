package ui

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// noRedirect is a client that shows redirects instead of following them.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// TestGate checks the gate's refusals without a network: the page's URL
// token is traded for a cookie, every other request needs the cookie or
// the header (401), another site's origin is refused, actions need JSON
// and are refused read-only.
func TestGate(t *testing.T) {
	const token = "0123456789abcdef"
	reached := 0
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached++; _, _ = io.WriteString(w, "ok") })
	for _, ro := range []bool{false, true} {
		srv := httptest.NewServer(&gate{token: token, readOnly: ro, backend: backend, run: "r"})
		defer srv.Close()
		self := srv.URL
		cases := []struct {
			what, method, path, origin, ctype, header, cookie string
			want                                              int
		}{
			{"snapshot without token", "GET", "/api/snapshot", "", "", "", "", 401},
			{"page without token", "GET", "/", "", "", "", "", 401},
			{"asset without token", "GET", "/assets/app.js", "", "", "", "", 401},
			{"wrong token in the page's URL", "GET", "/?token=x" + token[1:], "", "", "", "", 401},
			{"token in an API URL", "GET", "/api/snapshot?token=" + token, "", "", "", "", 401},
			{"wrong cookie", "GET", "/api/snapshot", "", "", "", "x" + token[1:], 401},
			{"foreign origin", "GET", "/api/snapshot", "http://evil.example", "", token, "", 403},
			{"foreign origin, action", "POST", "/api/link/state", "http://evil.example", "application/json", "", token, 403},
			{"action without token", "POST", "/api/link/state", self, "application/json", "", "", 401},
			{"snapshot, cookie", "GET", "/api/snapshot", "", "", "", token, 200},
			{"token in a header", "GET", "/api/snapshot", "", "", token, "", 200},
			{"own origin", "GET", "/api/snapshot", self, "", "", token, 200},
			{"page's URL with the token", "GET", "/?token=" + token, "", "", "", "", 303},
			{"page", "GET", "/", "", "", "", token, 200},
			{"asset", "GET", "/assets/app.js", "", "", "", token, 200},
			{"not an asset", "GET", "/assets/../ui.go", "", "", "", token, 404},
			{"form post", "POST", "/api/link/state", self, "application/x-www-form-urlencoded", "", token, map[bool]int{false: 415, true: 403}[ro]},
			{"action", "POST", "/api/link/state", self, "application/json", "", token, map[bool]int{false: 200, true: 403}[ro]},
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
				req.Header.Set(tokenHeader, c.header)
			}
			if c.cookie != "" {
				req.AddCookie(&http.Cookie{Name: "hymn-ui", Value: c.cookie})
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close() // read already
			if resp.StatusCode != c.want {
				t.Errorf("read-only %v, %s: %d %q, want %d", ro, c.what, resp.StatusCode, body, c.want)
			}
			if strings.Contains(string(body), token) {
				t.Errorf("%s: the answer carries the token: %s", c.what, body)
			}
			if c.path == "/" && c.cookie != "" && !strings.Contains(string(body), `defer src="/assets/app.js"`) {
				t.Errorf("page does not load its script: %s", body)
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
