package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/ui"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// uiFlags are --ui[=ADDR], --ui-read-only and the TLS or plain-HTTP
// choice beyond the loopback, on hymn, hymn run, hymn python and hymn
// cluster run.
type uiFlags struct {
	listen   string
	readOnly bool
	tlsCert  string
	tlsKey   string
	insecure bool
}

func addUIFlags(fl *pflag.FlagSet, f *uiFlags) {
	fl.StringVar(&f.listen, "ui", "", "serve the live view in the browser (docs/ui.md) on ADDR (default "+ui.DefaultListen+"); the URL, with its token, is printed")
	fl.Lookup("ui").NoOptDefVal = ui.DefaultListen
	fl.BoolVar(&f.readOnly, "ui-read-only", false, "the live view only shows: no actions")
	fl.StringVar(&f.tlsCert, "ui-tls-cert", "", "serve the live view over HTTPS with this certificate (PEM; with --ui-tls-key): needed for an --ui address beyond the loopback")
	fl.StringVar(&f.tlsKey, "ui-tls-key", "", "the private key (PEM) of --ui-tls-cert")
	fl.BoolVar(&f.insecure, "ui-insecure-listen", false, "allow plain HTTP for an --ui address beyond the loopback (whoever sees the traffic reads the token)")
}

// options are the flags as the live view takes them.
func (f uiFlags) options(lg *mnlog.Logger) ui.Options {
	return ui.Options{Listen: f.listen, ReadOnly: f.readOnly, Log: lg, TLSCert: f.tlsCert, TLSKey: f.tlsKey, InsecureListen: f.insecure}
}

// check refuses --ui beyond the loopback without TLS or the opt-out (a
// usage error naming the flags) and returns the warning to print for one
// allowed ("" on the loopback).
func (f uiFlags) check() (string, error) {
	return checkListen(f.listen, f.tlsCert, f.tlsKey, f.insecure, "--ui", "--ui-tls-cert", "--ui-tls-key", "--ui-insecure-listen")
}

// checkListen is the whole judgement of the live view's listening flags,
// made before anything is built (a refusal after the build would leave a
// network made for nothing): the address's shape, TLS's two files
// together and loadable, and beyond the loopback TLS or the opt-out.
func checkListen(addr, cert, key string, insecure bool, listenFlag, certFlag, keyFlag, insecureFlag string) (string, error) {
	if (cert == "") != (key == "") {
		return "", fmt.Errorf("%w: %s and %s go together", ErrUsage, certFlag, keyFlag)
	}
	if addr != "" {
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			return "", fmt.Errorf("%w: %s %q: give HOST:PORT (%v)", ErrUsage, listenFlag, addr, err)
		}
		if _, err := net.LookupPort("tcp", port); err != nil {
			return "", fmt.Errorf("%w: %s %q: the port %q is not a port number from 0 to 65535", ErrUsage, listenFlag, addr, port)
		}
	}
	if cert != "" {
		// The files are the local user's: loading them now makes a
		// missing or mismatched one a usage error, not a failure after
		// the build. tls's errors name no file content.
		if _, err := tls.LoadX509KeyPair(cert, key); err != nil {
			return "", fmt.Errorf("%w: %s %s, %s %s: %v", ErrUsage, certFlag, cert, keyFlag, key, err)
		}
	}
	if addr == "" || ui.Loopback(addr) {
		return "", nil
	}
	if cert == "" && !insecure {
		return "", fmt.Errorf("%w: %s %s is not a loopback address: give %s and %s to serve HTTPS, or %s to serve plain HTTP (whoever sees the traffic then reads the token)",
			ErrUsage, listenFlag, addr, certFlag, keyFlag, insecureFlag)
	}
	w := fmt.Sprintf("*** live view: listening on %s, beyond the loopback: whoever has the URL can set links down, change their emulation, capture and measure", addr)
	if cert == "" {
		w += fmt.Sprintf("; plain HTTP (%s): whoever sees the traffic reads the token", insecureFlag)
	}
	return w + "\n", nil
}

// The --ui flags reach hymn python's network process (pyserve) through
// its environment.
const (
	envPyUITLSCert  = "HYMN_PY_UI_TLS_CERT"
	envPyUITLSKey   = "HYMN_PY_UI_TLS_KEY"
	envPyUIInsecure = "HYMN_PY_UI_INSECURE"
)

// env is f for pyserve's environment.
func (f uiFlags) env() []string {
	if f.listen == "" {
		return nil
	}
	env := []string{envPyUI + "=" + f.listen}
	if f.readOnly {
		env = append(env, envPyUIRO+"=1")
	}
	if f.tlsCert != "" {
		env = append(env, envPyUITLSCert+"="+f.tlsCert, envPyUITLSKey+"="+f.tlsKey)
	}
	if f.insecure {
		env = append(env, envPyUIInsecure+"=1")
	}
	return env
}

// uiFlagsFromEnv reads what env wrote.
func uiFlagsFromEnv() uiFlags {
	return uiFlags{listen: os.Getenv(envPyUI), readOnly: os.Getenv(envPyUIRO) == "1",
		tlsCert: os.Getenv(envPyUITLSCert), tlsKey: os.Getenv(envPyUITLSKey), insecure: os.Getenv(envPyUIInsecure) == "1"}
}

// liveViews are the pages served in this process, by network, so the
// shell's ui command finds the one --ui started.
var liveViews = struct {
	sync.Mutex
	m map[*hymn.Network]*ui.Server
}{m: map[*hymn.Network]*ui.Server{}}

// startLiveView serves net's control socket (for hymn ui in another
// process) and, with --ui, the page; the returned function stops both
// (before the network stops).
func startLiveView(net *hymn.Network, f uiFlags, lg *mnlog.Logger) (stop func(), err error) {
	warning, err := f.check()
	if err != nil {
		return nil, err
	}
	ui.Version = Version
	ctl, err := ui.ServeControl(net, ui.Options{Log: lg})
	if err != nil {
		// Not fatal: only hymn ui from elsewhere needs it.
		lg.Warningf("*** live view: %v\n", err)
	}
	stop = func() {
		liveViews.Lock()
		s := liveViews.m[net]
		delete(liveViews.m, net)
		liveViews.Unlock()
		// The network is going down: closing its live view fails only on
		// connections that then end anyway.
		if s != nil {
			_ = s.Close()
		}
		if ctl != nil {
			_ = ctl.Close()
		}
	}
	if f.listen != "" {
		s, err := liveView(net, f, lg)
		if err != nil {
			stop()
			return nil, err
		}
		if warning != "" {
			lg.Warningf("%s", warning)
		}
		lg.Infof("*** Live view: %s\n", s.URL())
	}
	return stop, nil
}

// liveView returns the page served for net, starting it as f says if
// there is none.
func liveView(net *hymn.Network, f uiFlags, lg *mnlog.Logger) (*ui.Server, error) {
	liveViews.Lock()
	defer liveViews.Unlock()
	if s := liveViews.m[net]; s != nil {
		return s, nil
	}
	s, err := ui.Serve(net, f.options(lg))
	if err != nil {
		return nil, fmt.Errorf("%w: --ui: %v", ErrUsage, err)
	}
	liveViews.m[net] = s
	return s, nil
}

func init() {
	shellCommands["ui"] = shellCommand{
		"Print the URL of the live view in the browser (starting it on " + ui.DefaultListen + " if needed).",
		(*shell).doUI,
	}
}

func (s *shell) doUI(context.Context, string) bool {
	var v *ui.Server
	var err error
	if lv, ok := s.remote.(interface {
		LiveView(f uiFlags, lg *mnlog.Logger) (*ui.Server, error)
	}); ok {
		v, err = lv.LiveView(uiFlags{listen: ui.DefaultListen}, s.lg)
	} else if s.net != nil {
		v, err = liveView(s.net, uiFlags{listen: ui.DefaultListen}, s.lg)
	} else {
		s.out("ui: this network has no live view\n")
		return false
	}
	if err != nil {
		s.outf("%v\n", err)
		return false
	}
	s.outf("%s\n", v.URL())
	return false
}

// newUICmd is hymn ui: the live view of a network another hymn process
// runs.
func newUICmd(stdout io.Writer) *cobra.Command {
	var run string
	var f uiFlags
	cmd := &cobra.Command{
		Use:   "ui [--run RUN] [--listen ADDR] [--read-only]",
		Short: "Serve the live view of a running hymn network in the browser",
		Long: `hymn ui serves a web page showing a hymn network running on this machine:
its topology, every link's live counters and rates, the emulator's drops by
cause and realised delays, schedules; and, unless --read-only, actions (a
link up or down, emulator parameters, captures, measure) that go to the
network's own process, which logs them. The network is the newest live run,
or --run RUN (hymn list shows them).

It prints one line, the page's URL with a random token, and serves until the
network stops. Opening the URL trades the token for a cookie (the address
bar then shows no token); scripts send it in the X-Hymn-Token header.
Requests without it, for another host name or from another site's page are
refused. It listens on 127.0.0.1 unless --listen says otherwise; an address
beyond the loopback needs --tls-cert and --tls-key (HTTPS), or
--insecure-listen for plain HTTP. See docs/ui.md for the HTTP API
(curl -H "X-Hymn-Token: TOKEN" URL/api/snapshot without the page).

hymn --ui and hymn run --ui serve the page from the process that runs the
network; the mininet> shell's ui command prints its URL.`,
		Args:          usageArgs(cobra.NoArgs),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			warning, err := checkListen(f.listen, f.tlsCert, f.tlsKey, f.insecure, "--listen", "--tls-cert", "--tls-key", "--insecure-listen")
			if err != nil {
				return err
			}
			ui.Version = Version
			s, err := ui.Proxy(run, f.options(nil))
			if errors.Is(err, ui.ErrNoRun) || errors.Is(err, ui.ErrListen) {
				return fmt.Errorf("%w: ui: %v", ErrUsage, err)
			}
			if err != nil {
				return fmt.Errorf("ui: %w", err)
			}
			if warning != "" {
				_, _ = fmt.Fprint(cmd.ErrOrStderr(), warning) // a terminal gone: the URL below fails too
			}
			// Only connections to end at exit: the same as in stop above.
			defer func() { _ = s.Close() }()
			_, _ = fmt.Fprintln(stdout, s.URL())
			select {
			case <-s.Done():
			case <-cmd.Context().Done():
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "the run id (hymn list); default: the newest live run")
	cmd.Flags().StringVar(&f.listen, "listen", ui.DefaultListen, "address to listen on (beyond the loopback: --tls-cert and --tls-key, or --insecure-listen)")
	cmd.Flags().BoolVar(&f.readOnly, "read-only", false, "only show: no actions")
	cmd.Flags().StringVar(&f.tlsCert, "tls-cert", "", "serve HTTPS with this certificate (PEM; with --tls-key)")
	cmd.Flags().StringVar(&f.tlsKey, "tls-key", "", "the private key (PEM) of --tls-cert")
	cmd.Flags().BoolVar(&f.insecure, "insecure-listen", false, "allow plain HTTP on an address beyond the loopback (whoever sees the traffic reads the token)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	return cmd
}
