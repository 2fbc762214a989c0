package cli

import (
	"fmt"
	"strings"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/topo"
)

// tcKeys are the options of Mininet's TCLink that hymn's emulator serves.
var tcKeys = []string{"bw", "delay", "jitter", "loss", "max_queue_size"}

// ApplyLinkSpec applies an mn --link value to every link of t:
//
//	default                                   plain veth links
//	tc,bw=10,delay=10ms,jitter=1ms,loss=1,max_queue_size=100
//	                                          Mininet's TCLink options, served by hymn's
//	                                          emulator (this kernel has no netem)
//	emu[,key=value...]                        every emulator option (hymn.EmulationKeys),
//	                                          also per direction: a>b.delay=5ms
//
// As in Mininet (where --link is a partial of the link class), options a
// link already carries win over those of --link. Mininet's semantics
// hold: bw in Mbit/s, loss in %, and each direction of each link gets the
// delay once, so an h1–s1–h2 round trip is 4× delay. Errors wrap ErrUsage
// and name the offending option; on error t is unchanged.
func ApplyLinkSpec(t *topo.Topo, spec string) error {
	s, err := topo.ParseSpec(spec)
	if err != nil {
		return fmt.Errorf("%w: --link %s: %v", ErrUsage, spec, err)
	}
	if len(s.Args) > 0 {
		return fmt.Errorf("%w: --link %s: unexpected argument %q (options are key=value)", ErrUsage, spec, s.Args[0])
	}
	params := topo.Params{}
	switch s.Name {
	case "default", "":
		if len(s.Kwargs) > 0 {
			return fmt.Errorf("%w: --link default takes no options; use --link tc,%s", ErrUsage, s.Kwargs[0].Key+"="+s.Kwargs[0].Value)
		}
		return nil
	case "tc", "tclink":
		for _, kv := range s.Kwargs {
			if !contains(tcKeys, kv.Key) {
				return fmt.Errorf("%w: --link tc: unknown option %q (tc takes %s; --link emu takes every emulator option)", ErrUsage, kv.Key, strings.Join(tcKeys, ", "))
			}
			params[kv.Key] = kv.Value
		}
		if len(params) == 0 {
			// TCLink without options shapes nothing, as in Mininet.
			return nil
		}
	case "emu":
		params["emu"] = ""
		for _, kv := range s.Kwargs {
			if !isEmuKey(kv.Key) {
				return fmt.Errorf("%w: --link emu: unknown option %q (use %s, optionally prefixed a>b. or b>a.)", ErrUsage, kv.Key, strings.Join(hymn.EmulationKeys, ", "))
			}
			params[kv.Key] = kv.Value
		}
	default:
		return fmt.Errorf("%w: --link %s: unknown link type (use default, tc or emu)", ErrUsage, s.Name)
	}
	if _, _, err := hymn.EmulatorConfigs(params); err != nil {
		return fmt.Errorf("%w: --link %s: %v", ErrUsage, spec, err)
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isEmuKey(k string) bool {
	return contains(hymn.EmulationKeys, strings.TrimPrefix(strings.TrimPrefix(k, "a>b."), "b>a."))
}
