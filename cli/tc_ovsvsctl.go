package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hymn-net/hymn/pyapi"
	"github.com/spf13/cobra"
)

// newOVSVsctlCmd is hymn ovs-vsctl, the ovs-vsctl a script's processes
// find first on PATH (tc_shim.go): the system's ovs-vsctl, with the
// controller targets hymn gives its switches (relay sockets: the switches
// have a namespace of their own) shown as the controllers' addresses,
// tcp:IP:PORT, as Mininet's switches show them (ovs-vsctl get-controller
// s1). The pairs come from the switches' OVS directory ($OVS_RUNDIR),
// where hymn python's server writes them; without them the output is
// ovs-vsctl's own.
func newOVSVsctlCmd(stdout, stderr io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:                "ovs-vsctl ARGS...",
		Short:              "ovs-vsctl showing hymn's controller targets as Mininet's",
		Hidden:             true,
		DisableFlagParsing: true,
		SilenceUsage:       true,
		SilenceErrors:      true,
		RunE: func(_ *cobra.Command, args []string) error {
			code := runOVSVsctl(args, stdout, stderr)
			if code != 0 {
				os.Exit(code) // ovs-vsctl's exit status
			}
			return nil
		},
	}
}

func runOVSVsctl(args []string, stdout, stderr io.Writer) int {
	real := ""
	for _, p := range []string{"/usr/bin/ovs-vsctl", "/usr/sbin/ovs-vsctl", "/usr/local/bin/ovs-vsctl"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			real = p
			break
		}
	}
	if real == "" {
		_, _ = fmt.Fprintln(stderr, "hymn ovs-vsctl: ovs-vsctl is not installed (apt-get install openvswitch-switch)")
		return 127
	}
	pairs := controllerTargets(os.Getenv("OVS_RUNDIR"))
	if pairs == nil {
		err := syscall.Exec(real, append([]string{"ovs-vsctl"}, args...), os.Environ())
		_, _ = fmt.Fprintf(stderr, "hymn ovs-vsctl: %s: %v\n", real, err)
		return 126
	}
	var out bytes.Buffer
	cmd := exec.Command(real, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, &out, stderr
	err := cmd.Run()
	_, _ = io.WriteString(stdout, pairs.Replace(out.String()))
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "hymn ovs-vsctl: %v\n", err)
		return 126
	}
	return 0
}

// controllerTargets reads the pairs of dir's targets file: each relay
// socket target with the controller's tcp target.
func controllerTargets(dir string) *strings.Replacer {
	if dir == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(dir, pyapi.TargetsFile))
	if err != nil {
		return nil
	}
	var pairs []string
	for _, line := range strings.Split(string(data), "\n") {
		if from, to, ok := strings.Cut(line, " "); ok && strings.HasPrefix(from, "unix:") && strings.HasPrefix(to, "tcp:") {
			pairs = append(pairs, from, to)
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	return strings.NewReplacer(pairs...)
}
