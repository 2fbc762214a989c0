package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/mnlog"
	"golang.org/x/sys/unix"
)

// controlName is the abstract Unix socket of a run's API. An abstract
// socket leaves no file behind: it goes with the process, even after kill
// -9, so there is nothing for hymn clean to remove. Any local user can
// bind a name first, though, so neither side trusts the name: the server
// takes only root of its own user namespace (peerListener), and a client
// takes only the run's own process as the server (checkServer).
func controlName(run string) string { return "@hymn-ui-" + run }

// ErrForeignSocket means a run's control socket is held by a process that
// is not the run's: hymn ui refuses to proxy to it.
var ErrForeignSocket = errors.New("control socket held by another process")

// peerListener accepts only connections from root of this process's user
// namespace (an abstract socket has no file permissions to do it).
type peerListener struct {
	net.Listener
	log *mnlog.Logger
}

func (l peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		err = rootPeer(c)
		if err == nil {
			return c, nil
		}
		_ = c.Close() // a stranger's connection, refused
		if l.log != nil {
			l.log.Warningf("*** ui: control socket: refused a connection: %v\n", err)
		}
	}
}

// soPeerPidfd is SO_PEERPIDFD (Linux 6.5): a pidfd of the peer, which
// tells whether the process read about is still the one connected.
const soPeerPidfd = 77

// peerCred returns the credentials of c's peer as the kernel recorded them
// (at connect for a client, at listen for a server) and, where the kernel
// has it, a pidfd of that process (-1 otherwise; the caller closes it).
func peerCred(c net.Conn) (*unix.Ucred, int, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, -1, errors.New("not a Unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, -1, err
	}
	var cred *unix.Ucred
	pidfd := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if cerr == nil {
			if p, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, soPeerPidfd); err == nil {
				pidfd = p
			}
		}
	}); err != nil {
		return nil, -1, err
	}
	if cerr != nil {
		return nil, -1, fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	return cred, pidfd, nil
}

// rootPeer checks that c's peer is root in this process's user namespace.
// SO_PEERCRED maps the peer's uid into ours, but root of a user namespace
// made by root with 0 mapped to 0 shows as 0 too, without root's power
// here: its user namespace must be ours.
func rootPeer(c net.Conn) error {
	cred, pidfd, err := peerCred(c)
	if err != nil {
		return err
	}
	if pidfd >= 0 {
		defer func() { _ = unix.Close(pidfd) }() // only read
	}
	if cred.Uid != 0 {
		return fmt.Errorf("pid %d: uid %d is not root", cred.Pid, cred.Uid)
	}
	if cred.Pid <= 0 {
		return errors.New("the peer's pid is not visible here (another pid namespace)")
	}
	ours, err := nsID("/proc/self/ns/user")
	if err != nil {
		return err
	}
	theirs, err := nsID(fmt.Sprintf("/proc/%d/ns/user", cred.Pid))
	if err != nil {
		return fmt.Errorf("pid %d: %w", cred.Pid, err)
	}
	if pidfd >= 0 && unix.PidfdSendSignal(pidfd, 0, nil, 0) == unix.ESRCH {
		// Its pid may name another process now: what was read is not
		// the peer's.
		return fmt.Errorf("pid %d exited while it was checked", cred.Pid)
	}
	if ours != theirs {
		return fmt.Errorf("pid %d is root of another user namespace", cred.Pid)
	}
	return nil
}

// nsID identifies a namespace by its file's device and inode.
func nsID(path string) ([2]uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return [2]uint64{}, fmt.Errorf("namespace %s: %w", path, err)
	}
	return [2]uint64{st.Dev, st.Ino}, nil
}

// checkServer checks that the process listening on c's other end is the
// run's own (the pid its record in /run/hymn holds, still alive, and
// root), not one that bound the socket's name first.
func checkServer(c net.Conn, run string) error {
	cred, pidfd, err := peerCred(c)
	if err != nil {
		return fmt.Errorf("run %s: control socket: %w", run, err)
	}
	if pidfd >= 0 {
		_ = unix.Close(pidfd) // the pid is compared with the record's start time instead
	}
	st, err := owner.ReadState(run)
	if err != nil {
		return fmt.Errorf("run %s: %w", run, err)
	}
	if int(cred.Pid) != st.PID || cred.Uid != 0 || !owner.ProcessAlive(st.PID, st.StartTime) {
		return fmt.Errorf("%w: run %s's socket %s is held by pid %d (uid %d), not by the run's process (pid %d): refusing to show it",
			ErrForeignSocket, run, controlName(run), cred.Pid, cred.Uid, st.PID)
	}
	return nil
}

// dialRun connects to run's control socket and checks who serves it.
func dialRun(ctx context.Context, run string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", controlName(run))
	if err != nil {
		return nil, err
	}
	if err := checkServer(c, run); err != nil {
		_ = c.Close() // not the run's: nothing is sent
		return nil, err
	}
	return c, nil
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
// root of this user namespace can connect. opts.Log gets the actions and
// the refused connections.
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
		a.close()
		return nil, err
	}
	c := &Control{srv: &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: opts.IdleTimeout}, api: a}
	go func() { _ = c.srv.Serve(peerListener{ln, opts.Log}) }() // ends with ErrServerClosed at Close
	return c, nil
}

func listenUnix(name string) (net.Listener, error) {
	ln, err := net.Listen("unix", name)
	if errors.Is(err, unix.EADDRINUSE) {
		return nil, fmt.Errorf("ui: control socket %s is held by another process: hymn ui cannot show this run", name)
	}
	if err != nil {
		return nil, fmt.Errorf("ui: control socket %s: %w", name, err)
	}
	return ln, nil
}

// ErrNoRun means no live run can be shown.
var ErrNoRun = errors.New("no running hymn network")

// FindRun picks the run to show: run itself if given (it must be alive
// and serve its control socket), else the newest live run that does. The
// socket must be the run's own (ErrForeignSocket otherwise).
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
		return run, verify(run)
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
	// The newest run's socket held by a stranger is said, not skipped
	// for an older run the user did not ask for.
	return best, verify(best)
}

// reachable says whether something listens on run's control socket.
func reachable(run string) bool {
	c, err := net.DialTimeout("unix", controlName(run), time.Second)
	if err != nil {
		return false
	}
	_ = c.Close() // only probing
	return true
}

// verify checks that run's control socket is served by the run.
func verify(run string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c, err := dialRun(ctx, run)
	if err != nil {
		return err
	}
	_ = c.Close() // only checking
	return nil
}

// Proxy serves the live view of another process's run: the gate, the page
// and its assets here, the API through the run's control socket. The
// server's Done closes when the run ends.
func Proxy(run string, opts Options) (*Server, error) {
	if err := opts.fill(); err != nil {
		return nil, err
	}
	if err := checkListen(opts); err != nil {
		return nil, err
	}
	run, err := FindRun(run)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{
		// Every connection checks its server again: the run may have
		// ended and its name been taken since.
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dialRun(ctx, run) },
	}
	target := &url.URL{Scheme: "http", Host: "hymn-run"}
	rp := &httputil.ReverseProxy{Transport: tr, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(target)
		// The backend trusts its socket; the token and the cookie stay
		// with the gate.
		pr.Out.Header.Del(tokenHeader)
		pr.Out.Header.Del("Cookie")
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
