package ui

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
)

// The hostile requests of docs/security.md's live-view and socket rows:
// each test is one finding, refused.

// startView serves backend behind the gate as Serve does, on the
// loopback; it returns the server and its base URL and token.
func startView(t *testing.T, opts Options, backend http.Handler) (s *Server, base, token string) {
	t.Helper()
	if err := opts.fill(); err != nil {
		t.Fatal(err)
	}
	s, err := listen(opts, backend, "0000000000000000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() }) // nothing to check at the end
	base, token, _ = strings.Cut(s.URL(), "?token=")
	return s, base, token
}

// errorOf reads a JSON error answer.
func errorOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	var v struct {
		Error string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || v.Error == "" {
		t.Errorf("%s: %d without a JSON error (%v)", resp.Request.URL.Path, resp.StatusCode, err)
	}
	return v.Error
}

// TestTokenBecomesCookie: the URL hymn prints sets an HttpOnly,
// SameSite=Strict cookie and redirects to the page without the token;
// the page and the API then need no token in any URL, and a token in an
// API URL is not taken.
func TestTokenBecomesCookie(t *testing.T) {
	_, base, token := startView(t, Options{}, fakeAPI(3))
	resp, err := noRedirect.Get(base + "?token=" + token + "&layout=grid")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // a redirect: its headers are the answer
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/?layout=grid" {
		t.Fatalf("the page's URL: %d to %q, want 303 to /?layout=grid", resp.StatusCode, resp.Header.Get("Location"))
	}
	cs := resp.Cookies()
	if len(cs) != 1 || cs[0].Value != token || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteStrictMode || cs[0].Path != "/" || cs[0].Secure {
		t.Fatalf("cookie %v: want the token, HttpOnly, SameSite=Strict, Path=/, not Secure over HTTP", resp.Header["Set-Cookie"])
	}
	get := func(path string, c *http.Cookie) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest("GET", base+strings.TrimPrefix(path, "/"), nil)
		if c != nil {
			req.AddCookie(c)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read
		return resp, b
	}
	if r, b := get("/", cs[0]); r.StatusCode != 200 || bytes.Contains(b, []byte(token)) {
		t.Errorf("page with the cookie: %d, token in it %v", r.StatusCode, bytes.Contains(b, []byte(token)))
	}
	if r, _ := get("/api/topology", cs[0]); r.StatusCode != 200 {
		t.Errorf("API with the cookie: %d", r.StatusCode)
	}
	if r, b := get("/api/topology?token="+token, nil); r.StatusCode != http.StatusUnauthorized || !bytes.Contains(b, []byte(tokenHeader)) {
		t.Errorf("API with the token in its URL: %d %s, want 401 naming the header", r.StatusCode, b)
	}
}

// TestHostAllowList: a page that rebinds its own name to this machine's
// address (DNS rebinding) reaches the server with its own Host: refused
// before the token is looked at; the loopback names with the port pass.
func TestHostAllowList(t *testing.T) {
	s, base, token := startView(t, Options{}, fakeAPI(3))
	_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/"))
	for _, c := range []struct {
		host string
		want int
	}{
		{"evil.example:" + port, http.StatusMisdirectedRequest},
		{"evil.example", http.StatusMisdirectedRequest},
		{"127.0.0.1:1", http.StatusMisdirectedRequest},
		{"localhost:" + port, 200},
		{"LOCALHOST:" + port, 200},
		{"127.0.0.1:" + port, 200},
		{"[::1]:" + port, 200},
	} {
		req, _ := http.NewRequest("GET", base+"api/topology", nil)
		req.Host = c.host
		req.Header.Set(tokenHeader, token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close() // the status is the answer
		if resp.StatusCode != c.want {
			t.Errorf("Host %s: %d, want %d", c.host, resp.StatusCode, c.want)
		}
	}
	_ = s
	// A view on a given address answers for it; one on every address
	// for the machine's own addresses, never for any name.
	h := allowedHosts(&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8080}, "http")
	if !h["192.0.2.7:8080"] || !h["localhost:8080"] || h["evil.example:8080"] || h["192.0.2.7"] {
		t.Errorf("hosts of 192.0.2.7:8080: %v", h)
	}
	h = allowedHosts(&net.TCPAddr{IP: net.IPv4zero, Port: 80}, "http")
	if !h["127.0.0.1"] || !h["127.0.0.1:80"] || h["evil.example"] {
		t.Errorf("hosts of 0.0.0.0:80: %v", h)
	}
}

// TestIdleConnectionClosed: a client without the token cannot hold a
// connection: one that sends nothing is closed after the header timeout,
// one kept alive after its 401 after the idle timeout, one whose body
// trickles after the read timeout. The event stream, once it has the
// token, outlives them all.
func TestIdleConnectionClosed(t *testing.T) {
	const timeout = 300 * time.Millisecond
	_, base, token := startView(t, Options{ReadTimeout: timeout, IdleTimeout: timeout}, fakeAPI(3))
	addr := strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/")
	// closedAfter sends what, then reads until the server closes; it
	// returns how long that took from the last byte sent.
	closedAfter := func(what string, send func(t *testing.T, c net.Conn)) {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = c.Close() }() // closed by the server already
			send(t, c)
			start := time.Now()
			_ = c.SetReadDeadline(time.Now().Add(1500 * time.Millisecond))
			_, err = io.Copy(io.Discard, c)
			if err != nil {
				t.Fatalf("connection still open after 1.5 s (timeouts %v): %v", timeout, err)
			}
			testenv.Elapsed(t, "time to close", time.Since(start), timeout+800*time.Millisecond)
		})
	}
	closedAfter("silent", func(*testing.T, net.Conn) {})
	closedAfter("idle after a 401", func(t *testing.T, c net.Conn) {
		_, _ = fmt.Fprintf(c, "GET /api/snapshot HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode/100 != 4 {
			t.Fatalf("request without the token: %v %v", resp, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body) // the connection is kept alive for the next request
	})
	closedAfter("trickling body", func(_ *testing.T, c net.Conn) {
		_, _ = fmt.Fprintf(c, "POST /api/link/state HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", addr)
	})
	t.Run("stream", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequest("GET", base+"api/events", nil)
		req.Header.Set(tokenHeader, token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }() // the test's end
		// fakeAPI sends stats every second: the second comes well past
		// the read timeout.
		sc := bufio.NewScanner(resp.Body)
		n := 0
		for n < 2 && sc.Scan() {
			if sc.Text() == "event: stats" {
				n++
			}
		}
		if n < 2 {
			t.Errorf("event stream ended after %d events: %v", n, sc.Err())
		}
	})
}

// nopFeed samples nothing: a stream without a network.
type nopFeed struct{}

func (nopFeed) sample() *Sample { return &Sample{Time: time.Now()} }
func (nopFeed) idle()           {}

// TestStreamLimit: event streams beyond Options.MaxStreams get 429 with a
// JSON error; a stream closed makes room.
func TestStreamLimit(t *testing.T) {
	opts := Options{Interval: 100 * time.Millisecond, MaxStreams: 2, Token: "t"}
	if err := opts.fill(); err != nil {
		t.Fatal(err)
	}
	st := newStream(opts, func() Topology { return Topology{} }, func() feed { return nopFeed{} })
	mux := http.NewServeMux()
	st.routes(mux)
	t.Cleanup(func() { st.closeStream() })
	_, base, _ := startView(t, opts, mux)
	open := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequest("GET", base+"api/events", nil)
		req.Header.Set(tokenHeader, "t")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	a, b := open(), open()
	if a.StatusCode != 200 || b.StatusCode != 200 {
		t.Fatalf("two streams: %d %d", a.StatusCode, b.StatusCode)
	}
	c := open()
	if c.StatusCode != http.StatusTooManyRequests || !strings.Contains(errorOf(t, c), "event streams") {
		t.Errorf("third stream: %d, want 429 with a JSON error", c.StatusCode)
	}
	_ = c.Body.Close() // judged
	_ = a.Body.Close() // makes room
	deadline := time.Now().Add(5 * time.Second)
	for {
		d := open()
		code := d.StatusCode
		_ = d.Body.Close() // only the status matters
		if code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a stream closed made no room: %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = b.Body.Close() // the test's end
}

// TestCaptureLimits: captures started from the page beyond the running
// count or the byte budget get 429 with a JSON error.
func TestCaptureLimits(t *testing.T) {
	testenv.Root(t)
	net := hymntest.Start(t, hymntest.Topo(t, "single,2"), hymn.Options{})
	start := func(base, token string) (int, string, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"api/capture/start", strings.NewReader(`{"node1":"h1","node2":"s1"}`))
		req.Header.Set(tokenHeader, token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }() // read below
		if resp.StatusCode != 200 {
			return resp.StatusCode, errorOf(t, resp), nil
		}
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v) // judged by the caller
		return resp.StatusCode, "", v
	}
	view := func(opts Options) (string, string) {
		s, err := Serve(net, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() }) // before the network stops
		base, token, _ := strings.Cut(s.URL(), "?token=")
		return base, token
	}
	base, token := view(Options{MaxCaptures: 1})
	if code, msg, _ := start(base, token); code != 200 {
		t.Fatalf("first capture: %d %s", code, msg)
	}
	if code, msg, _ := start(base, token); code != http.StatusTooManyRequests || !strings.Contains(msg, "running") {
		t.Errorf("a capture beyond MaxCaptures 1: %d %q, want 429", code, msg)
	}
	// 300 KiB: the first capture gets 150 KiB per file, the second 75,
	// the third would get less than 64 KiB.
	base, token = view(Options{MaxCaptures: 4, MaxCaptureBytes: 300 << 10})
	for i := 0; i < 2; i++ {
		if code, msg, _ := start(base, token); code != 200 {
			t.Fatalf("capture %d within the byte budget: %d %s", i, code, msg)
		}
	}
	if code, msg, _ := start(base, token); code != http.StatusTooManyRequests || !strings.Contains(msg, "bytes") {
		t.Errorf("a capture beyond the byte budget: %d %q, want 429", code, msg)
	}
}

// squat binds run's control socket name in a process of user nobody, as
// any local user can, and returns once it listens.
func squat(t *testing.T, run string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(systemPython(t), "-c", `import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind("\0" + sys.argv[1])
s.listen(8)
print("ready", flush=True)
time.sleep(60)`, strings.TrimPrefix(controlName(run), "@"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }) // killed: its status says so
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("squatter: %q %v", line, err)
	}
	return cmd
}

// systemPython is Debian's python3, which user nobody can run (a python3
// first on root's PATH may live under /root).
func systemPython(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		testenv.Tools(t, py)
	}
	return py
}

// claimRun records a run owned by this process, as a network does.
func claimRun(t *testing.T) string {
	t.Helper()
	run := owner.NewRunID()
	if err := owner.Claim(run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = owner.Release(run) }) // a record of the test's own
	return run
}

// TestSquattedControlSocket: another user binds a run's control socket
// name first; hymn ui (Proxy, FindRun) refuses to show what answers there,
// naming the squatter's pid.
func TestSquattedControlSocket(t *testing.T) {
	testenv.Root(t)
	run := claimRun(t)
	sq := squat(t, run)
	s, err := Proxy(run, Options{})
	if err == nil {
		_ = s.Close() // the failure is the news
		t.Fatal("hymn ui proxied to a squatted control socket")
	}
	if !errors.Is(err, ErrForeignSocket) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", sq.Process.Pid)) {
		t.Errorf("Proxy: %v, want ErrForeignSocket naming pid %d", err, sq.Process.Pid)
	}
	if _, err := FindRun(run); !errors.Is(err, ErrForeignSocket) {
		t.Errorf("FindRun: %v, want ErrForeignSocket", err)
	}
}

// TestControlRefusesForeignRoot: the control socket's server takes root of
// its own user namespace only: not root of a user namespace that maps 0
// to 0 (SO_PEERCRED shows it as uid 0), not another user.
func TestControlRefusesForeignRoot(t *testing.T) {
	testenv.RootAndTools(t, "unshare")
	run := owner.NewRunID()
	ln, err := listenUnix(controlName(run))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "served") }), ReadHeaderTimeout: time.Second}
	go func() { _ = srv.Serve(peerListener{Listener: ln}) }() // ends at Close
	t.Cleanup(func() { _ = srv.Close() })                     // nothing to check
	client := `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect("\0" + sys.argv[1])
s.settimeout(5)
out = b""
try:
    s.sendall(b"GET / HTTP/1.0\r\n\r\n")
    while True:
        b = s.recv(4096)
        if not b:
            break
        out += b
except OSError:
    pass
sys.stdout.write("answered" if b"served" in out else "refused")`
	name := strings.TrimPrefix(controlName(run), "@")
	py := systemPython(t)
	for _, c := range []struct {
		what string
		argv []string
		cred *syscall.Credential
		want string
	}{
		{"root of this user namespace", []string{py, "-c", client, name}, nil, "answered"},
		{"root of a user namespace mapping 0 to 0", []string{"unshare", "--user", "--map-root-user", py, "-c", client, name}, nil, "refused"},
		{"user nobody", []string{py, "-c", client, name}, &syscall.Credential{Uid: 65534, Gid: 65534}, "refused"},
	} {
		cmd := exec.Command(c.argv[0], c.argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil || string(out) != c.want {
			t.Errorf("%s: %q %v, want %s", c.what, out, err, c.want)
		}
	}
}

// TestListenBeyondLoopback: plain HTTP beyond the loopback is refused
// unless asked for; with a certificate the view serves HTTPS and its
// cookie is Secure.
func TestListenBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		opts := Options{Listen: addr}
		if err := opts.fill(); err != nil {
			t.Fatal(err)
		}
		if s, err := listen(opts, fakeAPI(1), "r"); !errors.Is(err, ErrListen) {
			if s != nil {
				_ = s.Close() // the failure is the news
			}
			t.Errorf("plain HTTP on %s: %v, want ErrListen", addr, err)
		}
	}
	startView(t, Options{Listen: "0.0.0.0:0", InsecureListen: true}, fakeAPI(1))

	dir := t.TempDir()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeSelfSigned(t, cert, key)
	s, base, token := startView(t, Options{Listen: "0.0.0.0:0", TLSCert: cert, TLSKey: key}, fakeAPI(1))
	if !strings.HasPrefix(s.URL(), "https://127.0.0.1:") {
		t.Fatalf("URL %s: want https on 127.0.0.1", s.URL())
	}
	client := &http.Client{
		Transport:     &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the test's own self-signed certificate
		CheckRedirect: noRedirect.CheckRedirect,
	}
	resp, err := client.Get(base + "?token=" + token)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close() // a redirect
	if cs := resp.Cookies(); resp.StatusCode != http.StatusSeeOther || len(cs) != 1 || !cs[0].Secure {
		t.Errorf("over TLS: %d, cookies %v: want 303 with a Secure cookie", resp.StatusCode, resp.Header["Set-Cookie"])
	}
}

// writeSelfSigned writes a certificate for 127.0.0.1 and its key.
func writeSelfSigned(t *testing.T, certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hymn test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
}
