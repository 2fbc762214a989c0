package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
)

// DefaultListen is where the page is served unless Options.Listen says
// otherwise: the loopback address, a port the kernel picks.
const DefaultListen = "127.0.0.1:0"

// Options configure a live view.
type Options struct {
	// Listen is the TCP address (DefaultListen if empty). A port of 0
	// lets the kernel pick one.
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
	if o.Token == "" {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return fmt.Errorf("ui: token: %w", err)
		}
		o.Token = hex.EncodeToString(b)
	}
	return nil
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
// user.
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

// listen serves backend (the API, or a proxy to it) behind the gate.
func listen(opts Options, backend http.Handler, run string) (*Server, error) {
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("ui: listening on %s: %w", opts.Listen, err)
	}
	g := &gate{token: opts.Token, readOnly: opts.ReadOnly, backend: backend, run: run}
	s := &Server{
		srv:  &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second},
		done: make(chan struct{}),
	}
	host := ln.Addr().String()
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		host = net.JoinHostPort("127.0.0.1", fmt.Sprint(tcp.Port))
	}
	s.url = (&url.URL{Scheme: "http", Host: host, Path: "/", RawQuery: "token=" + opts.Token}).String()
	go func() { _ = s.srv.Serve(ln) }() // ends with ErrServerClosed at Close
	return s, nil
}

// gate checks every request before the backend sees it: the token, the
// origin, read-only mode; it serves the page and its assets itself.
type gate struct {
	token    string
	readOnly bool
	run      string
	backend  http.Handler
}

// tokenOf returns the token a request carries: the X-Hymn-Token header or
// the token query parameter (the page's script and event-stream URLs,
// which cannot carry headers).
func tokenOf(r *http.Request) string {
	if t := r.Header.Get("X-Hymn-Token"); t != "" {
		return t
	}
	return r.URL.Query().Get("token")
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	// The token is in the page's URL: no Referer may carry it away.
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'")
	h.Set("Cache-Control", "no-store")
	if subtle.ConstantTimeCompare([]byte(tokenOf(r)), []byte(g.token)) != 1 {
		http.Error(w, "forbidden: this page needs the token hymn printed with its URL", http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		http.Error(w, "forbidden: foreign origin", http.StatusForbidden)
		return
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		http.Error(w, "forbidden: cross-site request", http.StatusForbidden)
		return
	}
	switch {
	case r.URL.Path == "/" || r.URL.Path == "/index.html":
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
			http.Error(w, "forbidden: read-only view", http.StatusForbidden)
			return
		}
		// A form cannot send JSON: together with the origin check this
		// keeps another site's page from posting actions.
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			http.Error(w, "actions take a JSON body (Content-Type: application/json)", http.StatusUnsupportedMediaType)
			return
		}
	}
	g.backend.ServeHTTP(w, r)
}

// Version is shown by /api/info; the command line sets it to hymn's.
var Version = "dev"

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>hymn {{.Run}}</title>
<link rel="stylesheet" href="/assets/app.css?token={{.Token}}">
</head><body data-token="{{.Token}}" data-run="{{.Run}}" data-read-only="{{.ReadOnly}}">
<div id="app"><header><b>hymn</b> run <code>{{.Run}}</code> <span id="status">loading…</span></header></div>
<script defer src="/assets/app.js?token={{.Token}}"></script>
</body></html>
`))

func (g *gate) page(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := pageTemplate.Execute(w, map[string]any{"Token": g.token, "Run": g.run, "ReadOnly": g.readOnly}); err != nil {
		// The header is gone already; nothing more to tell the browser.
		return
	}
}

// errBadRequest marks a request the caller got wrong (400).
var errBadRequest = errors.New("bad request")
