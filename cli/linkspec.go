package cli

import (
	"fmt"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
)

// ApplyLinkSpec applies an mn --link value (linkparams.ParseLinkSpec) to
// every link of t. As in Mininet (where --link is a partial of the link
// class), options a link already carries win over those of --link.
// Mininet's semantics hold: bw in Mbit/s, loss in %, and each direction of
// each link gets the delay once, so an h1–s1–h2 round trip is 4× delay.
// Errors wrap ErrUsage and name the offending option; on error t is
// unchanged.
func ApplyLinkSpec(t *topo.Topo, spec string) error {
	params, err := linkparams.ParseLinkSpec(spec)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if params == nil {
		return nil
	}
	// Validate every merged link before changing any, so an error leaves
	// the topology as it was.
	merged := make([]topo.Params, len(t.Links()))
	for i, l := range t.Links() {
		m := params.Clone()
		for k, v := range l.Params {
			m[k] = v
		}
		if _, _, err := hymn.EmulatorConfigs(m); err != nil {
			return fmt.Errorf("%w: --link %s on link %s-%s: %v", ErrUsage, spec, l.Node1, l.Node2, err)
		}
		merged[i] = m
	}
	for i, l := range t.Links() {
		l.Params = merged[i]
	}
	return nil
}
