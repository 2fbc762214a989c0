package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/ui"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// uiFlags are --ui[=ADDR] and --ui-read-only on hymn and hymn run.
type uiFlags struct {
	listen   string
	readOnly bool
}

func addUIFlags(fl *pflag.FlagSet, f *uiFlags) {
	fl.StringVar(&f.listen, "ui", "", "serve the live view in the browser (docs/ui.md) on ADDR (default "+ui.DefaultListen+"); the URL, with its token, is printed")
	fl.Lookup("ui").NoOptDefVal = ui.DefaultListen
	fl.BoolVar(&f.readOnly, "ui-read-only", false, "the live view only shows: no actions")
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
		s, err := liveView(net, f.listen, f.readOnly, lg)
		if err != nil {
			stop()
			return nil, err
		}
		lg.Infof("*** Live view: %s\n", s.URL())
	}
	return stop, nil
}

// liveView returns the page served for net, starting it on listen if
// there is none.
func liveView(net *hymn.Network, listen string, readOnly bool, lg *mnlog.Logger) (*ui.Server, error) {
	liveViews.Lock()
	defer liveViews.Unlock()
	if s := liveViews.m[net]; s != nil {
		return s, nil
	}
	s, err := ui.Serve(net, ui.Options{Listen: listen, ReadOnly: readOnly, Log: lg})
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
		LiveView(listen string, readOnly bool, lg *mnlog.Logger) (*ui.Server, error)
	}); ok {
		v, err = lv.LiveView(ui.DefaultListen, false, s.lg)
	} else if s.net != nil {
		v, err = liveView(s.net, ui.DefaultListen, false, s.lg)
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
	var run, listen string
	var readOnly bool
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
network stops. It listens on 127.0.0.1 unless --listen says otherwise;
requests without the token or from another site's page are refused. See
docs/ui.md for the HTTP API (curl "URL/api/snapshot" without the page).

hymn --ui and hymn run --ui serve the page from the process that runs the
network; the mininet> shell's ui command prints its URL.`,
		Args:          usageArgs(cobra.NoArgs),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ui.Version = Version
			s, err := ui.Proxy(run, ui.Options{Listen: listen, ReadOnly: readOnly})
			if errors.Is(err, ui.ErrNoRun) {
				return fmt.Errorf("%w: ui: %v", ErrUsage, err)
			}
			if err != nil {
				return err
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
	cmd.Flags().StringVar(&listen, "listen", ui.DefaultListen, "address to listen on")
	cmd.Flags().BoolVar(&readOnly, "read-only", false, "only show: no actions")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	return cmd
}
