package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/pyapi"
	"github.com/hymn-net/hymn/ui"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// Environment variables through which hymn python gives the mininet
// package its defaults; child processes inherit them, so a script that
// starts "python3 -m mininet.examples.x" runs on the same backends.
const (
	envPyBin    = "HYMN_BIN"       // the hymn binary the package starts pyserve with
	envPyNodes  = "HYMN_PY_NODES"  // netns | vm: every Host's backend
	envPyLinks  = "HYMN_PY_LINKS"  // veth | sriov[,...]: every Link's backend
	envPySwitch = "HYMN_PY_SWITCH" // a switch kind overriding Mininet(switch=...)
	envPyKeep   = "HYMN_PY_KEEP"   // 1: leave the network when the script ends
	envPyUI     = "HYMN_PY_UI"     // ADDR: pyserve serves the live view there (--ui)
	envPyUIRO   = "HYMN_PY_UI_RO"  // 1: that view only shows (--ui-read-only)
	envPyShim   = "HYMN_PY_SHIM"   // the directory of hymn's tc (tc_shim.go), for shells hymn exec does not start
)

// systemPython is Debian's interpreter, whose dist-packages hold the real
// Mininet's examples (python3 -m mininet.examples.NAME finds them).
const systemPython = "/usr/bin/python3"

func newPythonCmd(stdout io.Writer) *cobra.Command {
	var nodes, linksSpec, switchKind, module, tcMode string
	var keep, path bool
	var uiF uiFlags
	cmd := &cobra.Command{
		Use:   "python [--nodes netns|vm] [--links veth|sriov[,...]] [--switch K] [--tc emulator|kernel] [--keep] [--ui[=ADDR]] (SCRIPT | -m MODULE) [ARGS...] | python --path",
		Short: "Run a Mininet Python script against hymn",
		Long: `hymn python runs the system's python3 with hymn's mininet package first on
PYTHONPATH, so an unchanged Mininet script (from mininet.net import Mininet)
builds its network with hymn. The package starts a hymn process for the
network and talks to it over a private socket; when the script ends, by
returning, raising or being killed, that network is removed (unless --keep;
hymn clean removes it then).

--nodes, --links and --switch change the defaults of Mininet(...): every
Host a VM (--nodes vm), every Link a VF pair (--links sriov), every switch
of kind K (lxbr, ovsbr, ovsk, bpf). Child processes inherit them.

tc in a node (h1.cmd('tc qdisc add dev h1-eth0 root netem delay 100ms'))
is hymn's: qdisc commands naming netem, tbf or htb on the node's link
interfaces run on hymn's emulator, on any kernel (--tc emulator, the
default); --tc kernel leaves every tc command to the system's tc (the
kernel's qdiscs, where it has them).

--ui[=ADDR] serves the live view of each network the script builds in the
browser (docs/ui.md): the URL is printed on stderr once it is built. Every
such network can also be shown by hymn ui from another terminal.

--path prints the directory to put first on PYTHONPATH for tools that
start python3 themselves. See docs/python.md.`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		// Flags end at SCRIPT or at -m MODULE: what follows is the
		// script's (python3 -m unittest -v), so hymn parses its own.
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			var help bool
			var err error
			if args, err = parsePythonFlags(args, map[string]*string{"nodes": &nodes, "links": &linksSpec, "switch": &switchKind, "ui": &uiF.listen, "tc": &tcMode},
				map[string]*bool{"keep": &keep, "path": &path, "help": &help, "ui-read-only": &uiF.readOnly}, &module); err != nil {
				return err
			}
			if help {
				return cmd.Help()
			}
			dir, err := pyapi.PackageDir()
			if err != nil {
				return err
			}
			if path {
				if len(args) > 0 || module != "" {
					return fmt.Errorf("%w: python --path takes no script", ErrUsage)
				}
				// The output is the point here: scripts read it.
				if _, err := fmt.Fprintln(stdout, dir); err != nil {
					return fmt.Errorf("python --path: %w", err)
				}
				return nil
			}
			if module == "" && len(args) == 0 {
				return fmt.Errorf("%w: python: give a SCRIPT or -m MODULE (see hymn python --help)", ErrUsage)
			}
			if _, err := hymn.ParseNodeBackend(nodes); err != nil {
				return fmt.Errorf("%w: --nodes: %v", ErrUsage, err)
			}
			if linksSpec != "" {
				if _, _, err := hymn.ParseLinkBackend(linksSpec); err != nil {
					return fmt.Errorf("%w: --links: %v", ErrUsage, err)
				}
			}
			if switchKind != "" {
				if _, err := hymn.ParseSwitchKind(switchKind); err != nil {
					return fmt.Errorf("%w: --switch: %v", ErrUsage, err)
				}
			}
			if tcMode != "" {
				if err := checkTCMode(tcMode); err != nil {
					return fmt.Errorf("%w: --tc: %v", ErrUsage, err)
				}
			}
			py := systemPython
			if _, err := os.Stat(py); err != nil {
				if py, err = exec.LookPath("python3"); err != nil {
					return fmt.Errorf("python3 is not installed (apt-get install python3): %w", err)
				}
			}
			self, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the hymn binary: %w", err)
			}
			argv := []string{py}
			if module != "" {
				argv = append(argv, "-m", module)
			}
			argv = append(argv, args...)
			env := append(os.Environ(),
				"PYTHONPATH="+dir+pathTail(os.Getenv("PYTHONPATH")),
				envPyBin+"="+self, envPyNodes+"="+nodes, envPyLinks+"="+linksSpec, envPySwitch+"="+switchKind)
			if keep {
				env = append(env, envPyKeep+"=1")
			}
			if tcMode != "" {
				env = append(env, envTC+"="+tcMode)
			}
			if dir, err := tcShimDir(); err == nil {
				env = append(env, envPyShim+"="+dir)
			}
			// Refused here, before the script runs, rather than once its
			// network is built.
			if _, err := uiF.check(); err != nil {
				return err
			}
			env = append(env, uiF.env()...)
			// The script takes this process's place: its exit status,
			// signals and terminal are the user's.
			return syscall.Exec(py, argv, env)
		},
	}
	cmd.Flags().StringVar(&nodes, "nodes", "", "backend of every Host: netns or vm")
	cmd.Flags().StringVar(&linksSpec, "links", "", "backend of every Link: veth or sriov[,key=value...]")
	cmd.Flags().StringVar(&switchKind, "switch", "", "kind of every switch: lxbr, ovsbr, ovsk or bpf")
	addTCFlag(cmd.Flags(), &tcMode)
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the network running when the script ends (hymn clean removes it)")
	addUIFlags(cmd.Flags(), &uiF)
	cmd.Flags().BoolVar(&path, "path", false, "print the directory to put first on PYTHONPATH and exit")
	cmd.Flags().StringVarP(&module, "module", "m", "", "run a module as python3 -m does")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	return cmd
}

// parsePythonFlags reads hymn python's flags up to the script (or -m
// MODULE, whose value ends them) and returns the rest.
func parsePythonFlags(args []string, strs map[string]*string, bools map[string]*bool, module *string) ([]string, error) {
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			return args[1:], nil
		}
		if a == "-m" || a == "--module" || strings.HasPrefix(a, "-m") && len(a) > 2 && !strings.HasPrefix(a, "--") {
			v := strings.TrimPrefix(a, "-m")
			if a == "-m" || a == "--module" {
				if len(args) < 2 {
					return nil, fmt.Errorf("%w: python: -m needs a MODULE", ErrUsage)
				}
				v, args = args[1], args[1:]
			}
			*module = v
			return args[1:], nil
		}
		if a == "-h" {
			*bools["help"] = true
			return nil, nil
		}
		if !strings.HasPrefix(a, "--") {
			return args, nil
		}
		name, value, hasValue := strings.Cut(a[2:], "=")
		if p, ok := strs[name]; ok && name == "ui" {
			// As hymn --ui: the address is optional, and only after '='.
			*p = ui.DefaultListen
			if hasValue {
				*p = value
			}
		} else if p, ok := strs[name]; ok {
			if !hasValue {
				if len(args) < 2 {
					return nil, fmt.Errorf("%w: python: --%s needs a value", ErrUsage, name)
				}
				value, args = args[1], args[1:]
			}
			*p = value
		} else if p, ok := bools[name]; ok {
			*p = !hasValue || value == "true" || value == "1"
		} else {
			return nil, fmt.Errorf("%w: python: unknown flag --%s (see hymn python --help)", ErrUsage, name)
		}
		args = args[1:]
	}
	return args, nil
}

func pathTail(p string) string {
	if p == "" {
		return ""
	}
	return ":" + p
}

// newPyserveCmd is the hidden server the mininet package starts: it
// listens on --socket, takes one connection, and serves the network until
// that connection ends or its parent dies.
func newPyserveCmd(stdout, stderr io.Writer) *cobra.Command {
	var socket string
	var keep, debug bool
	cmd := &cobra.Command{
		Use:           "pyserve --socket PATH [--keep]",
		Hidden:        true,
		Args:          usageArgs(cobra.NoArgs),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if socket == "" {
				return fmt.Errorf("%w: pyserve: --socket is required", ErrUsage)
			}
			parent := os.Getppid()
			// The script's death ends the network even if the socket's
			// close is missed (the fd inherited by a child it spawned).
			if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
				return fmt.Errorf("pyserve: PR_SET_PDEATHSIG: %w", err)
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			// Ctrl-C belongs to the script (it may catch it and call
			// net.stop()); the server ends with its connection.
			signal.Ignore(syscall.SIGINT)
			go func() {
				for ctx.Err() == nil {
					if os.Getppid() != parent {
						cancel()
						return
					}
					time.Sleep(500 * time.Millisecond)
				}
			}()
			ln, err := pyapi.Listen(socket)
			if err != nil {
				return err
			}
			// The script's side waits for this line before it connects.
			if _, err := fmt.Fprintln(stdout, "ready"); err != nil {
				_ = ln.Close()        // best effort: the write's error is the one to report
				_ = os.Remove(socket) // as below
				return fmt.Errorf("telling the script the API is ready: %w", err)
			}
			conn, err := acceptOne(ctx, ln)
			_ = ln.Close()
			_ = os.Remove(socket)
			if err != nil {
				return err
			}
			cfg := pyapi.Config{Keep: keep, Version: Version, Stderr: stderr,
				// The run's control socket (hymn ui from elsewhere) and,
				// with hymn python --ui, the page; the URL goes to the
				// script's stderr.
				Started: func(n *hymn.Network) (func(), error) {
					return startLiveView(n, uiFlagsFromEnv(), mnlog.New(stderr, mnlog.Info))
				}}
			if debug {
				cfg.Debug = stderr
			}
			return pyapi.Serve(ctx, conn, cfg)
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "the Unix socket to listen on (its directory must be 0700)")
	cmd.Flags().BoolVar(&keep, "keep", false, "leave the network when the connection ends")
	cmd.Flags().BoolVar(&debug, "debug", false, "log each request on stderr")
	return cmd
}

// acceptOne takes the one client, or gives up after 30 s or when ctx ends.
func acceptOne(ctx context.Context, ln net.Listener) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("pyserve: accepting the client: %w", r.err)
		}
		return r.c, nil
	case <-ctx.Done():
		return nil, errors.New("pyserve: the client went away before connecting")
	case <-time.After(30 * time.Second):
		return nil, errors.New("pyserve: no client connected within 30 s")
	}
}
