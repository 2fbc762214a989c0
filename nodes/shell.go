package nodes

import (
	"os"
	"os/exec"
	"syscall"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/shellproc"
	"github.com/vishvananda/netns"
)

// Shell is a node's persistent bash (see package shellproc).
type Shell = shellproc.Shell

// ErrShellExited is returned when the shell ended while a command ran.
var ErrShellExited = shellproc.ErrShellExited

// StartShell starts a persistent shell in namespace ns, with env added to
// hymn's environment. Its command line carries "hymn:<node>" so an
// operator can tell it from other shells.
func StartShell(ns netns.NsHandle, node string, env ...string) (*Shell, error) {
	cmd := exec.Command("bash", "--norc", "--noprofile", "-s", "hymn:"+node)
	cmd.Env = append(append(os.Environ(), "PS1=", "PS2=", "HISTFILE="), env...)
	// Its own process group, so Close can stop background jobs with it; and
	// it dies with hymn even after kill -9.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return shellproc.Start(cmd, func(c *exec.Cmd) error { return netnsx.Launch(ns, c.Start) })
}
