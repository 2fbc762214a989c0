package sriov

import (
	"fmt"

	"github.com/hymn-net/hymn/links"
)

// TakeVF moves the VF netdev named netdev from home into end.NS as
// links.TakeInterface does.
func TakeVF(home links.Namespace, netdev string, end links.End) error {
	if err := links.TakeInterface(home, netdev, end); err != nil {
		return fmt.Errorf("VF: %w", err)
	}
	return nil
}

// ReturnVF moves a VF back home as links.ReturnInterface does.
func ReturnVF(ns links.Namespace, name string, home links.Namespace, netdev string) error {
	if err := links.ReturnInterface(ns, name, home, netdev); err != nil {
		return fmt.Errorf("VF: %w", err)
	}
	return nil
}
