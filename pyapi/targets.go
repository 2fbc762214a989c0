package pyapi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hymn-net/hymn"
)

// TargetsFile, in the switches' Open vSwitch directory, pairs each
// controller target hymn gives the switches (a relay's unix socket: the
// switches live in a namespace of their own) with the address the
// controller listens on. hymn's ovs-vsctl (hymn ovs-vsctl, first on a
// script's PATH) shows those addresses where ovs-vsctl would show the
// socket, as Mininet's switches show tcp:IP:PORT.
const TargetsFile = "hymn-targets"

func writeTargets(n *hymn.Network) error {
	o := n.OVS()
	if o == nil {
		return nil
	}
	var b strings.Builder
	for _, c := range n.Controllers() {
		if t := c.Target(); strings.HasPrefix(t, "unix:") && c.Addr() != "" {
			fmt.Fprintf(&b, "%s tcp:%s\n", t, c.Addr())
		}
	}
	if b.Len() == 0 {
		return nil
	}
	path := filepath.Join(o.Dir(), TargetsFile)
	if err := os.WriteFile(path+".new", []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("controller targets: %w", err)
	}
	return os.Rename(path+".new", path)
}
