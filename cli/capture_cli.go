package cli

import (
	"fmt"

	"github.com/hymn-net/hymn"
)

// startCaptures starts the --capture specs (checked by checkResultFlags)
// once the network's links exist; Network.Stop ends them.
func startCaptures(net *hymn.Network, specs []string) error {
	for _, s := range specs {
		spec, err := hymn.ParseCaptureSpec(s)
		if err != nil {
			return fmt.Errorf("%w: --capture %s: %v", ErrUsage, s, err)
		}
		if _, err := net.StartCapture(spec); err != nil {
			return err
		}
	}
	return nil
}
