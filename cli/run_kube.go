package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hymn-net/hymn"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// kubeFlags are hymn run's --kube options: the topology runs as a Topology
// resource on a Kubernetes cluster, through hymn-kube. hymn links no
// Kubernetes library (hymn-kube is a module of its own, kube/), so the
// single-machine binary stays small; run --kube hands over to hymn-kube.
type kubeFlags struct {
	on                    bool
	kubeconfig, namespace string
	image                 string
	workers               int
	hold                  bool
}

// kubeOwn are the flags run --kube passes on; every other run flag
// describes a single-machine network and is refused with --kube.
var kubeOwn = map[string]bool{"kube": true, "kubeconfig": true, "namespace": true, "image": true, "workers": true, "hold": true, "test": true}

// kubeTests are the --test values run --kube passes on, as hymn-kube run's
// --test: without one, the mininet> shell (as hymn run FILE opens).
var kubeTests = map[string]string{"pingall": "pingall", "pingpair": "pingpair", "none": "none", "build": "none"}

func addKubeFlags(fl *pflag.FlagSet, k *kubeFlags) {
	fl.BoolVar(&k.on, "kube", false, "run the topology on a Kubernetes cluster (a Topology resource, through hymn-kube; see docs/kube.md)")
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "--kube: the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fl.StringVar(&k.namespace, "namespace", "", "--kube: the namespace of the Topology (default: default)")
	fl.StringVar(&k.image, "image", "", "--kube: the worker image (default: the controller's)")
	fl.IntVar(&k.workers, "workers", 0, "--kube: worker pods to split the topology over (default 2)")
	fl.BoolVar(&k.hold, "hold", false, "--kube: keep the topology running until interrupted")
}

// kubeArgs checks run --kube's flags and returns hymn-kube's command line.
func kubeArgs(cmd *cobra.Command, k *kubeFlags, file string) ([]string, error) {
	var stray, kubeOnly []string
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch {
		case !kubeOwn[f.Name]:
			stray = append(stray, "--"+f.Name)
		case f.Name != "kube" && f.Name != "test":
			kubeOnly = append(kubeOnly, "--"+f.Name)
		}
	})
	if !k.on {
		if len(kubeOnly) > 0 {
			return nil, fmt.Errorf("%w: %s is for --kube", ErrUsage, kubeOnly[0])
		}
		return nil, nil
	}
	if len(stray) > 0 {
		return nil, fmt.Errorf("%w: %s: not with --kube (the topology file says what runs; the controller's workers build it)", ErrUsage, stray[0])
	}
	if cmd.Flags().Changed("workers") && (k.workers < 1 || k.workers > 64) {
		return nil, fmt.Errorf("%w: --workers %d: use 1 to 64", ErrUsage, k.workers)
	}
	args := []string{"run", file}
	if cmd.Flags().Changed("test") {
		tests, _ := cmd.Flags().GetStringArray("test")
		if len(tests) != 1 || kubeTests[tests[0]] == "" {
			return nil, fmt.Errorf("%w: --test %s: with --kube, one of pingall, pingpair, build or none (without --test: the mininet> shell)", ErrUsage, strings.Join(tests, "+"))
		}
		if k.hold {
			return nil, fmt.Errorf("%w: --hold and --test: --hold keeps the topology running without a test or shell", ErrUsage)
		}
		args = append(args, "--test", kubeTests[tests[0]])
	}
	for _, kv := range [][2]string{{"kubeconfig", k.kubeconfig}, {"namespace", k.namespace}, {"image", k.image}} {
		if kv[1] != "" {
			args = append(args, "--"+kv[0], kv[1])
		}
	}
	if k.workers != 0 {
		args = append(args, "--workers", fmt.Sprint(k.workers))
	}
	if k.hold {
		args = append(args, "--hold")
	}
	return args, nil
}

// newKubeCmd returns "hymn kube ARGS...": hymn-kube's commands (install,
// controller, run, list, delete) under hymn's name, handed over as run
// --kube does.
func newKubeCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "kube (install|controller|run|list|delete) [flags]",
		Short: "Topologies on Kubernetes: hymn-kube's commands (hymn kube list, hymn kube delete NAME, ...)",
		Long: `hymn kube runs hymn-kube (the Kubernetes command, built into bin/ by
scripts/setup.sh; a module of its own, so hymn links no Kubernetes library)
with the same arguments: hymn kube list -A, hymn kube delete NAME, hymn kube
run --topo linear,4 --workers 2, hymn kube --help. See docs/kube.md.`,
		DisableFlagParsing: true,
		SilenceUsage:       true,
		SilenceErrors:      true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runKube(cmd.Context(), args, stdout, stderr)
		},
	}
}

// findHymnKube looks for hymn-kube next to this binary (scripts/setup.sh
// builds both into bin/), then on PATH.
func findHymnKube() (string, error) {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "hymn-kube")
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	if p, err := exec.LookPath("hymn-kube"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%w: hymn kube and hymn run --kube run hymn-kube (the Kubernetes command, a module of its own so hymn links no Kubernetes library), found neither next to hymn nor on PATH: scripts/setup.sh builds bin/hymn-kube, or: cd kube && go build ./cmd/hymn-kube", hymn.ErrMissingTool)
}

// runKube hands the run over to hymn-kube run, passing its exit status on.
func runKube(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	bin, err := findHymnKube()
	if err != nil {
		return err
	}
	c := exec.CommandContext(ctx, bin, args...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, stdout, stderr
	// Ctrl-C on the terminal reaches hymn-kube too (same process group),
	// and it is hymn-kube's to judge: interrupt a node command in its
	// shell, or remove its Topology and exit. So hymn lets it pass (a
	// command context nobody watches takes it); SIGTERM and SIGHUP end
	// hymn's context and are passed on, and hymn waits for hymn-kube to
	// remove what it made rather than killing it.
	_, ignore := interrupterFrom(ctx).commandContext(ctx)
	defer ignore()
	c.Cancel = func() error { return c.Process.Signal(syscall.SIGTERM) }
	err = c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if exit.ExitCode() == 2 {
			return errReportedUsage
		}
		return errReported
	}
	return err
}
