package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/nodes"
	"github.com/spf13/pflag"
)

// tcModeValue is --tc: what tc in a node runs, as hymn python's --tc says.
type tcModeValue struct{ mode *string }

func (v tcModeValue) String() string {
	if v.mode == nil || *v.mode == "" {
		return "emulator"
	}
	return *v.mode
}

func (v tcModeValue) Set(s string) error {
	if err := checkTCMode(s); err != nil {
		return err
	}
	*v.mode = s
	return nil
}

// checkTCMode is the one judgement of a --tc value, for the flag and for
// hymn python's own flag parsing.
func checkTCMode(s string) error {
	if s != "emulator" && s != "kernel" {
		return fmt.Errorf("give emulator or kernel, not %q", s)
	}
	return nil
}

func (tcModeValue) Type() string { return "emulator|kernel" }

// addTCFlag registers --tc on mn's flags.
func addTCFlag(fl *pflag.FlagSet, mode *string) {
	fl.Var(tcModeValue{mode}, "tc", "what tc in a node runs: emulator (hymn's, for netem, tbf and htb on the node's link interfaces, on any kernel; the default) or kernel (the system's tc)")
}

// nodeShellEnv is what a node's commands get from the mininet> shell, as
// from hymn exec and hymn python (tc_shim.go): hymn's tc first on PATH,
// the run and node named for it, and the tc mode. As shell words.
func (s *shell) nodeShellEnv(name string) (string, error) {
	dir, err := tcShimDir()
	if err != nil {
		return "", err
	}
	words := []string{
		"PATH=" + shellQuote(dir) + `:"$PATH"`,
		envRun + "=" + shellQuote(s.net.RunID()),
		envNode + "=" + shellQuote(name),
	}
	words = append(words, envTC+"="+shellQuote(tcModeValue{&s.tcMode}.String()))
	return strings.Join(words, " "), nil
}

// prepareNode gives a namespace node's persistent shell that environment
// before the shell's first command from the mininet> shell, and again
// when the node has a new shell. A failure leaves the system's tc there
// and says so once.
func (s *shell) prepareNode(ctx context.Context, name string, node hymn.Node) {
	ns, ok := node.(*nodes.NsNode)
	if !ok {
		return // a VM: tc there is its guest kernel's
	}
	pid, err := ns.ShellPid()
	if err != nil {
		return // the command itself reports it
	}
	if s.preparedShells == nil {
		s.preparedShells = map[string]int{}
	}
	if s.preparedShells[name] == pid {
		return
	}
	s.preparedShells[name] = pid
	env, err := s.nodeShellEnv(name)
	if err == nil {
		_, err = ns.Cmd(ctx, "export "+env)
	}
	if err != nil {
		s.outf("*** Warning: %s: tc in this node is the system's: %v\n", name, err)
	}
}

// shellQuote quotes a word for bash.
func shellQuote(w string) string {
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
