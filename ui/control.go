package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"golang.org/x/sys/unix"
)

// controlName is the abstract Unix socket of a run's API. An abstract
// socket leaves no file behind: it goes with the process, even after kill
// -9, so there is nothing for hymn clean to remove.
func controlName(run string) string { return "@hymn-ui-" + run }

// peerListener accepts only connections from processes of this process's
// user (abstract sockets have no file permissions to do it).
type peerListener struct{ net.Listener }

func (l peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if samePeer(c) {
			return c, nil
		}
		_ = c.Close() // a stranger's connection, refused
	}
}

func samePeer(c net.Conn) bool {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return false
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return false
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil || cerr != nil {
		return false
	}
	return int(cred.Uid) == os.Geteuid()
}

// Control is a run's API served on its control socket.
type Control struct {
	srv *http.Server
	api *api
}

// Close stops the control socket.
func (c *Control) Close() error {
	err := c.srv.Close()
	c.api.close()
	return err
}

// Handler is net's API without the gate, for a process that carries
// requests to it by other means (a cluster worker's protocol); close
// releases what it holds, before the network stops.
func Handler(net *hymn.Network, opts Options) (h http.Handler, closeIt func(), err error) {
	opts.Token = "-" // unused: no gate
	if err := opts.fill(); err != nil {
		return nil, nil, err
	}
	a, err := newAPI(net, opts)
	if err != nil {
		return nil, nil, err
	}
	return a, a.close, nil
}

// ServeControl serves net's API on the run's control socket, for `hymn ui
// --run RUN` in another process (Proxy). Requests need no token there: only
// this user's processes can connect. opts.Log gets the actions.
func ServeControl(net *hymn.Network, opts Options) (*Control, error) {
	opts.Token = "-" // unused: the socket is private
	if err := opts.fill(); err != nil {
		return nil, err
	}
	a, err := newAPI(net, opts)
	if err != nil {
		return nil, err
	}
	ln, err := listenUnix(controlName(net.RunID()))
	if err != nil {
		return nil, err
	}
	c := &Control{srv: &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}, api: a}
	go func() { _ = c.srv.Serve(peerListener{ln}) }() // ends with ErrServerClosed at Close
	return c, nil
}

func listenUnix(name string) (net.Listener, error) {
	ln, err := net.Listen("unix", name)
	if err != nil {
		return nil, fmt.Errorf("ui: control socket %s: %w", name, err)
	}
	return ln, nil
}

// ErrNoRun means no live run can be shown.
var ErrNoRun = errors.New("no running hymn network")

// FindRun picks the run to show: run itself if given (it must be alive
// and serve its control socket), else the newest live run that does.
func FindRun(run string) (string, error) {
	if run != "" {
		if !owner.ValidRunID(run) {
			return "", fmt.Errorf("%w: %q is not a run id (hymn list shows them)", ErrNoRun, run)
		}
		if !owner.Alive(run) {
			return "", fmt.Errorf("%w: run %s is not running", ErrNoRun, run)
		}
		if !reachable(run) {
			return "", fmt.Errorf("%w: run %s does not serve a live view (started by the Go API without ui.ServeControl, or by an older hymn)", ErrNoRun, run)
		}
		return run, nil
	}
	runs, err := owner.Runs()
	if err != nil {
		return "", err
	}
	best, bestTime := "", time.Time{}
	for _, r := range runs {
		if !owner.Alive(r) || !reachable(r) {
			continue
		}
		st, err := owner.ReadState(r)
		if err != nil {
			continue
		}
		if best == "" || st.Created.After(bestTime) {
			best, bestTime = r, st.Created
		}
	}
	if best == "" {
		return "", fmt.Errorf("%w on this machine", ErrNoRun)
	}
	return best, nil
}

func reachable(run string) bool {
	c, err := net.DialTimeout("unix", controlName(run), time.Second)
	if err != nil {
		return false
	}
	_ = c.Close() // only probing
	return true
}

// Proxy serves the live view of another process's run: the gate, the page
// and its assets here, the API through the run's control socket. The
// server's Done closes when the run ends.
func Proxy(run string, opts Options) (*Server, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	run, err := FindRun(run)
	if err != nil {
		return nil, err
	}
	name := controlName(run)
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", name)
		},
	}
	target := &url.URL{Scheme: "http", Host: "hymn-run"}
	rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		// The backend trusts its socket; the token stays with the gate.
		pr.Out.Header.Del("X-Hymn-Token")
		q := pr.Out.URL.Query()
		q.Del("token")
		pr.Out.URL.RawQuery = q.Encode()
	}}
	s, err := listen(opts, rp, run)
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	s.stop = func() { close(stop) }
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if !owner.Alive(run) {
				go func() { _ = s.Close() }() // the run is gone: stop serving it
				return
			}
		}
	}()
	return s, nil
}
