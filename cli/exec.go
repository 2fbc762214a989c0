package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/vm"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// newExecCmd returns "hymn exec": run a command in a node of a running
// network, as Mininet's util/m does. It is also how a shell outside a
// worker pod reaches that pod's nodes (kubectl exec POD -- hymn exec h1 --
// ...): the pod holds one network, so the node's name is enough.
func newExecCmd() *cobra.Command {
	var run, line string
	readyFD := -1
	cmd := &cobra.Command{
		Use:   "exec [--run RUN] NODE [--] [COMMAND [ARG...]] | exec [--run RUN] -c LINE NODE",
		Short: "Run a command in a node of a running hymn network (as Mininet's m)",
		Long: `hymn exec runs COMMAND in the network namespace of NODE of a hymn network
running on this machine, with the caller's terminal, environment and exit
status, like Mininet's "m h1 ping 10.0.0.2" (or ip netns exec). Without a
COMMAND it starts an interactive shell (bash, else sh) there; with -c LINE
that shell runs the command line LINE, as a node's cmd() does in Mininet
(pipes, redirections, $(...) work; bash is preferred because a busybox sh
would run its own ping and other applets instead of the real programs).

The node is looked up in every live run (hymn list shows them); when more
than one has a node of that name, --run RUN says which. Names are not
replaced by addresses here (the mininet> shell does that): write
hymn exec h1 ping 10.0.0.2. Only namespace nodes have a namespace to enter;
a VM node is refused (its commands go through the shell: mininet> h1 ...).

Exit status: the command's; 2 for bad input (no such node, several runs
have it, no such command).`,
		Args:          usageArgs(cobra.MinimumNArgs(1)),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			argv := args[1:]
			if len(argv) > 0 && argv[0] == "--" { // flags stop at NODE
				argv = argv[1:]
			}
			if cmd.Flags().Changed("command") {
				if len(argv) > 0 {
					return fmt.Errorf("%w: exec: give -c LINE or a COMMAND, not both", ErrUsage)
				}
				argv = []string{nodeShell(), "-c", line}
			}
			return execInNode(run, args[0], argv, readyFD)
		},
	}
	// Everything after NODE is the command's, its flags included.
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&run, "run", "", "the run id (hymn list) when several networks have NODE")
	cmd.Flags().StringVarP(&line, "command", "c", "", "a command line for the node's shell (bash, else sh)")
	// A caller that must know when COMMAND runs in the node (the mininet
	// package's popen) passes a pipe's write end: it closes when COMMAND
	// replaces hymn exec, or when hymn exec fails.
	cmd.Flags().IntVar(&readyFD, "ready-fd", -1, "")
	_ = cmd.Flags().MarkHidden("ready-fd") // the flag exists: no error
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	return cmd
}

// nodeNamespace finds the namespace of node in run, or in the only live
// run that has it.
func nodeNamespace(run, node string) (string, error) {
	if node == "" || strings.HasPrefix(node, "@") || strings.ContainsAny(node, "/\x00") {
		return "", fmt.Errorf("%w: exec: %q is not a node name", ErrUsage, node)
	}
	if run != "" {
		if !owner.ValidRunID(run) {
			return "", fmt.Errorf("%w: exec: --run %q is not a run id (hymn list shows them)", ErrUsage, run)
		}
		ns := owner.NamespaceName(run, node)
		if !netnsx.IsMounted(ns) {
			return "", fmt.Errorf("%w: exec: run %s has no node %s%s", ErrUsage, run, node, nodesOf(run))
		}
		return ns, nil
	}
	runs, err := owner.Runs()
	if err != nil {
		return "", err
	}
	var found []string
	for _, r := range runs {
		if owner.Alive(r) && netnsx.IsMounted(owner.NamespaceName(r, node)) {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 0:
		if len(runs) == 0 {
			return "", fmt.Errorf("%w: exec: no hymn network is running on this machine", ErrUsage)
		}
		return "", fmt.Errorf("%w: exec: no running hymn network has a node %s (hymn list shows the runs)", ErrUsage, node)
	case 1:
		return owner.NamespaceName(found[0], node), nil
	}
	sort.Strings(found)
	return "", fmt.Errorf("%w: exec: runs %s all have a node %s: say which with --run", ErrUsage, strings.Join(found, ", "), node)
}

// nodesOf lists a run's nodes for an error message.
func nodesOf(run string) string {
	names, _ := owner.Namespaces(run)
	var nodes []string
	for _, ns := range names {
		if n := strings.TrimPrefix(ns, owner.Prefix+run+"-"); !strings.HasPrefix(n, "@") {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return ""
	}
	sort.Strings(nodes)
	return " (it has " + strings.Join(nodes, " ") + ")"
}

// execInNode replaces this process with argv inside the node's network
// namespace: the caller keeps the command's terminal, signals and exit
// status, with no process of hymn's in between.
func execInNode(run, node string, argv []string, readyFD int) error {
	if readyFD >= 0 {
		if readyFD <= 2 {
			return fmt.Errorf("%w: exec: --ready-fd %d is one of the standard streams", ErrUsage, readyFD)
		}
		// Closed by the kernel when execve succeeds (or at exit).
		if _, err := unix.FcntlInt(uintptr(readyFD), unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
			return fmt.Errorf("%w: exec: --ready-fd %d: %v", ErrUsage, readyFD, err)
		}
	}
	ns, err := nodeNamespace(run, node)
	if err != nil {
		return err
	}
	// A VM node's namespace is its helper's: the taps and bridges in
	// front of the guest. A command there would silently not run where
	// the user meant.
	if st, err := os.Stat(filepath.Join(vm.RunBase, ns)); err == nil && st.IsDir() {
		return fmt.Errorf("%w: exec: node %s is a VM: its commands run in the guest, through the mininet> shell (%s CMD) or the library (Node.Cmd)", ErrUsage, node, node)
	}
	if len(argv) == 0 {
		argv = []string{nodeShell()}
	}
	// hymn's tc comes first on the command's PATH (tc_shim.go), for
	// finding argv[0] too.
	env := os.Environ()
	if r, ok := owner.RunOfNamespace(ns); ok {
		env = nodeEnv(r, node)
		for _, e := range env {
			if p, ok := strings.CutPrefix(e, "PATH="); ok {
				_ = os.Setenv("PATH", p) // this process becomes argv: its PATH is argv's
			}
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("%w: exec: %s: %v", ErrUsage, argv[0], errors.Unwrap(err))
	}
	fd, err := unix.Open(netnsx.Path(ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("exec: node %s: %v", node, err)
	}
	// setns changes only this thread; execve keeps the calling thread's
	// namespaces, so the two must run on the same one.
	runtime.LockOSThread()
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		_ = unix.Close(fd) // our read-only descriptor: nothing to lose
		return fmt.Errorf("exec: entering node %s's namespace: %v", node, err)
	}
	_ = unix.Close(fd)
	err = syscall.Exec(path, argv, env)
	// Only reached when execve failed; the thread stays in the node's
	// namespace, so it must not run anything else.
	return fmt.Errorf("exec: %s: %v", path, err)
}

// nodeShell is the shell for a node's interactive session or command
// line: bash, as Mininet's nodes run, else sh.
func nodeShell() string {
	if _, err := exec.LookPath("bash"); err == nil {
		return "bash"
	}
	return "sh"
}
