package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
)

// DefaultListen is where the page is served unless Options.Listen says
// otherwise: the loopback address, a port the kernel picks.
const DefaultListen = "127.0.0.1:0"

// Defaults of the limits in Options.
const (
	DefaultReadTimeout     = 30 * time.Second
	DefaultIdleTimeout     = 2 * time.Minute
	DefaultMaxStreams      = 16
	DefaultMaxCaptures     = 4
	DefaultMaxCaptureBytes = 1 << 30
)

// Options configure a live view.
type Options struct {
	// Listen is the TCP address (DefaultListen if empty). A port of 0
	// lets the kernel pick one. An address beyond the loopback needs
	// TLSCert and TLSKey, or InsecureListen.
	Listen string
	// ReadOnly refuses every action: the page only shows.
	ReadOnly bool
	// Interval is the sampling period of the counters (default 1 s, at
	// least 100 ms).
	Interval time.Duration
	// Log receives a line for every action taken from the page (the run's
	// log: the same logger the network and the mininet> shell write to).
	Log *mnlog.Logger
	// Token is the secret every request must carry; empty: 128 random
	// bits.
	Token string
	// CaptureDir holds the pcapng files of captures started from the
	// page; empty: a private temporary directory removed by Close (the
	// page downloads the files).
	CaptureDir string

	// TLSCert and TLSKey are PEM files (both or neither): the page is
	// then served over HTTPS and its cookie is Secure.
	TLSCert, TLSKey string
	// InsecureListen allows plain HTTP on an address beyond the
	// loopback: whoever sees the traffic reads the token.
	InsecureListen bool

	// ReadTimeout bounds reading a request, headers and body (default
	// DefaultReadTimeout; the headers alone get at most 10 s). The event
	// stream and measure, which last longer, lift it once the request
	// carries the token.
	ReadTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next
	// request (default DefaultIdleTimeout).
	IdleTimeout time.Duration
	// MaxStreams bounds the event streams open at once (default
	// DefaultMaxStreams); one more is answered 429.
	MaxStreams int
	// MaxCaptures bounds the captures running at once (default
	// DefaultMaxCaptures); MaxCaptureBytes the bytes the view's capture
	// files may hold together, running (at their limit) and stopped (as
	// written) (default DefaultMaxCaptureBytes). A capture beyond either
	// is answered 429.
	MaxCaptures     int
	MaxCaptureBytes int64
}

func (o *Options) fill() error {
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.Interval < 100*time.Millisecond {
		return fmt.Errorf("ui: interval %v: at least 100ms", o.Interval)
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return fmt.Errorf("%w: give both a TLS certificate and its key, or neither", ErrListen)
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.MaxCaptures == 0 {
		o.MaxCaptures = DefaultMaxCaptures
	}
	if o.MaxCaptureBytes == 0 {
		o.MaxCaptureBytes = DefaultMaxCaptureBytes
	}
	if o.ReadTimeout < 0 || o.IdleTimeout < 0 || o.MaxStreams < 0 || o.MaxCaptures < 0 || o.MaxCaptureBytes < 0 {
		return errors.New("ui: timeouts and limits must not be negative")
	}
	if o.Token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("ui: token: %w", err)
		}
		o.Token = hex.EncodeToString(b)
	}
	return nil
}

// ErrListen marks a listen address or TLS setting the view refuses: an
// address beyond the loopback without TLS or InsecureListen, half a TLS
// key pair. The command line answers it as a usage error.
var ErrListen = errors.New("ui: listen")

// Loopback says whether addr (host:port) listens on the loopback only:
// localhost or a loopback IP. An empty or unspecified host is every
// address, a host name other than localhost may resolve anywhere.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server is a running live view.
type Server struct {
	url string
	srv *http.Server
	// closeAPI releases what the API holds (sampling, captures); nil
	// for a proxy.
	closeAPI func()
	done     chan struct{}
	close    sync.Once
	stop     func()
}

// URL is the page's address, token included: the one line to give the
// user. Opening it trades the token for a cookie and drops it from the
// address bar.
func (s *Server) URL() string { return s.url }

// Done is closed when the server has stopped: Close was called or, for a
// proxy, the network it showed is gone.
func (s *Server) Done() <-chan struct{} { return s.done }

// Close stops serving (open event streams end) and removes the capture
// directory it made.
func (s *Server) Close() error {
	var err error
	s.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if s.stop != nil {
			s.stop()
		}
		err = s.srv.Shutdown(ctx)
		if err != nil {
			err = s.srv.Close()
		}
		if s.closeAPI != nil {
			s.closeAPI()
		}
		close(s.done)
	})
	return err
}

// Serve starts the live view of net on opts.Listen and returns once it
// listens; it serves until Close. This is the one call a front end needs
// (hymn's --ui, the shell's ui, the Python API's).
func Serve(net *hymn.Network, opts Options) (*Server, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	if err := checkListen(opts); err != nil {
		return nil, err
	}
	a, err := newAPI(net, opts)
	if err != nil {
		return nil, err
	}
	s, err := listen(opts, a, net.RunID())
	if err != nil {
		a.close()
		return nil, err
	}
	s.closeAPI = a.close
	return s, nil
}

// checkListen refuses plain HTTP beyond the loopback unless asked for.
func checkListen(opts Options) error {
	if Loopback(opts.Listen) || opts.TLSCert != "" || opts.InsecureListen {
		return nil
	}
	return fmt.Errorf("%w: %s is not a loopback address: serve it over TLS (a certificate and its key) or allow plain HTTP explicitly (whoever sees the traffic then reads the token)", ErrListen, opts.Listen)
}

// listen serves backend (the API, or a proxy to it) behind the gate.
func listen(opts Options, backend http.Handler, run string) (*Server, error) {
	if err := checkListen(opts); err != nil {
		return nil, err
	}
	var tlsConf *tls.Config
	if opts.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(opts.TLSCert, opts.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("%w: TLS certificate %s and key %s: %v", ErrListen, opts.TLSCert, opts.TLSKey, err)
		}
		tlsConf = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("ui: listening on %s: %w", opts.Listen, err)
	}
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	g := &gate{token: opts.Token, readOnly: opts.ReadOnly, backend: backend, run: run, secure: tlsConf != nil}
	if tcp != nil {
		g.hosts = allowedHosts(tcp, scheme)
		g.cookie = "hymn-ui-" + strconv.Itoa(tcp.Port)
	}
	s := &Server{
		srv: &http.Server{Handler: g,
			ReadHeaderTimeout: min(10*time.Second, opts.ReadTimeout),
			ReadTimeout:       opts.ReadTimeout,
			IdleTimeout:       opts.IdleTimeout,
			// Handshakes from scanners and strangers are not the run's
			// business.
			ErrorLog: log.New(io.Discard, "", 0),
		},
		done: make(chan struct{}),
	}
	host := ln.Addr().String()
	if tcp != nil && tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
	}
	s.url = (&url.URL{Scheme: scheme, Host: host, Path: "/", RawQuery: "token=" + opts.Token}).String()
	if tlsConf != nil {
		ln = tls.NewListener(ln, tlsConf)
	}
	go func() { _ = s.srv.Serve(ln) }() // ends with ErrServerClosed at Close
	return s, nil
}

// allowedHosts are the Host headers the server answers: the loopback
// names and the address it listens on (every address of the machine and
// its name when that is unspecified), with the port. Any other name is a
// page that resolved its own name to this machine (DNS rebinding): its
// requests would carry no token, but they are refused before that.
func allowedHosts(addr *net.TCPAddr, scheme string) map[string]bool {
	names := []string{"localhost", "127.0.0.1", "::1", addr.IP.String()}
	if addr.IP.IsUnspecified() {
		if as, err := net.InterfaceAddrs(); err == nil {
			for _, a := range as {
				if n, ok := a.(*net.IPNet); ok {
					names = append(names, n.IP.String())
				}
			}
		}
		if h, err := os.Hostname(); err == nil {
			names = append(names, h)
		}
	}
	port := strconv.Itoa(addr.Port)
	bare := (scheme == "http" && port == "80") || (scheme == "https" && port == "443")
	hosts := map[string]bool{}
	for _, n := range names {
		n = strings.ToLower(n)
		hosts[net.JoinHostPort(n, port)] = true
		if bare {
			if strings.Contains(n, ":") {
				n = "[" + n + "]"
			}
			hosts[n] = true
		}
	}
	return hosts
}

// gate checks every request before the backend sees it: the Host, the
// token (a cookie, or a header for scripts), the origin, read-only mode;
// it serves the page and its assets itself.
type gate struct {
	token    string
	readOnly bool
	run      string
	backend  http.Handler
	// hosts are the Host headers answered; nil: the loopback names
	// with any port (a gate made by a test).
	hosts map[string]bool
	// cookie is the session cookie's name (one per port: cookies do
	// not tell ports apart); empty: "hymn-ui".
	cookie string
	// secure marks a TLS server: the cookie is Secure.
	secure bool
}

// tokenHeader carries the token for clients that are not a browser.
const tokenHeader = "X-Hymn-Token"

func (g *gate) cookieName() string {
	if g.cookie == "" {
		return "hymn-ui"
	}
	return g.cookie
}

func (g *gate) hostOK(host string) bool {
	host = strings.ToLower(host)
	if g.hosts != nil {
		return g.hosts[host]
	}
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

// valid compares a token in constant time.
func (g *gate) valid(t string) bool {
	return t != "" && subtle.ConstantTimeCompare([]byte(t), []byte(g.token)) == 1
}

// authenticated says whether r carries the token: the session cookie
// (the page, its assets, its API calls and event stream) or the header
// (curl and other scripts). A token in the URL is taken only by the page
// itself, which trades it for the cookie.
func (g *gate) authenticated(r *http.Request) bool {
	if g.valid(r.Header.Get(tokenHeader)) {
		return true
	}
	c, err := r.Cookie(g.cookieName())
	return err == nil && g.valid(c.Value)
}

// refuse answers a refused request: JSON under /api/ (as the API's own
// errors), plain text for the page.
func refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": msg}) // the client went away
		return
	}
	http.Error(w, msg, code)
}

// longRequests outlive the server's read timeout: the stream for as long
// as the page is open, measure for its duration (up to a minute).
var longRequests = map[string]bool{"/api/events": true, "/api/measure": true}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'")
	h.Set("Cache-Control", "no-store")
	if !g.hostOK(r.Host) {
		refuse(w, r, http.StatusMisdirectedRequest, "misdirected request: this server answers only for its own address (the loopback names or the one it listens on)")
		return
	}
	page := r.URL.Path == "/" || r.URL.Path == "/index.html"
	if page && r.URL.Query().Has("token") && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		g.login(w, r)
		return
	}
	if !g.authenticated(r) {
		refuse(w, r, http.StatusUnauthorized, "unauthorized: open the URL hymn printed (its token becomes this browser's cookie), or send the token in the "+tokenHeader+" header")
		return
	}
	scheme := "http://"
	if g.secure {
		scheme = "https://"
	}
	if o := r.Header.Get("Origin"); o != "" && o != scheme+r.Host {
		refuse(w, r, http.StatusForbidden, "forbidden: foreign origin")
		return
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		refuse(w, r, http.StatusForbidden, "forbidden: cross-site request")
		return
	}
	if longRequests[r.URL.Path] {
		// The server's read deadline would cancel the request's context
		// (its background read fails); this one has its token.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{}) // not supported: the server has no deadline
	}
	switch {
	case page:
		g.page(w, r)
		return
	case strings.HasPrefix(r.URL.Path, "/assets/"):
		serveAsset(w, r, strings.TrimPrefix(r.URL.Path, "/assets/"))
		return
	case r.URL.Path == "/api/info":
		writeJSON(w, map[string]any{"run": g.run, "read_only": g.readOnly, "version": Version})
		return
	case !strings.HasPrefix(r.URL.Path, "/api/"):
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if g.readOnly {
			refuse(w, r, http.StatusForbidden, "forbidden: read-only view")
			return
		}
		// A form cannot send JSON: together with the origin check this
		// keeps another site's page from posting actions.
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			refuse(w, r, http.StatusUnsupportedMediaType, "actions take a JSON body (Content-Type: application/json)")
			return
		}
	}
	g.backend.ServeHTTP(w, r)
}

// login trades the token in the page's URL for the session cookie and
// sends the browser to the same page without it, so the address bar, the
// history and a bookmark keep no token.
func (g *gate) login(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !g.valid(q.Get("token")) {
		refuse(w, r, http.StatusUnauthorized, "unauthorized: this is not the token hymn printed with the URL")
		return
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		refuse(w, r, http.StatusForbidden, "forbidden: cross-site request")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: g.cookieName(), Value: g.token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: g.secure})
	q.Del("token")
	to := &url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	http.Redirect(w, r, to.String(), http.StatusSeeOther)
}

// Version is shown by /api/info; the command line sets it to hymn's.
var Version = "dev"

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hymn {{.Run}}</title>
<link rel="stylesheet" href="/assets/app.css">
</head><body data-run="{{.Run}}" data-read-only="{{.ReadOnly}}">
<div id="app"><header><b>hymn</b> run <code>{{.Run}}</code> <span id="status">loading…</span></header></div>
<script defer src="/assets/app.js"></script>
</body></html>
`))

func (g *gate) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTemplate.Execute(w, map[string]any{"Run": g.run, "ReadOnly": g.readOnly}); err != nil {
		// The header is gone already; nothing more to tell the browser.
		return
	}
}

// errBadRequest marks a request the caller got wrong (400).
var errBadRequest = errors.New("bad request")
