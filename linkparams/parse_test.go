package linkparams

import (
	"testing"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// TestTCIntfInfo: the per-interface lines Mininet 2.3's TCIntf printed for
// the same --link tc specs (run with --switch lxbr --controller none).
func TestTCIntfInfo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params topo.Params
		ab, ba string
	}{
		{"bw", topo.Params{"bw": "10"}, "(10.00Mbit) ", "(10.00Mbit) "},
		{"bw delay loss", topo.Params{"bw": "10", "delay": "10ms", "loss": "1"}, "(10.00Mbit 10ms delay 1.00000% loss) ", "(10.00Mbit 10ms delay 1.00000% loss) "},
		{"unitless delay", topo.Params{"bw": "10.5", "delay": "10", "loss": "0"}, "(10.50Mbit 10 delay 0.00000% loss) ", "(10.50Mbit 10 delay 0.00000% loss) "},
		{"queue and jitter", topo.Params{"max_queue_size": "10", "jitter": "1ms"}, "(1ms jitter) ", "(1ms jitter) "},
		{"jitter alone", topo.Params{"jitter": "1ms"}, "", ""}, // jitter alone configures nothing
		{"emu", topo.Params{"emu": "delay 5ms"}, "", ""},
		{"per direction", topo.Params{"delay": "5ms", "b>a.delay": "20ms"}, "(5ms delay) ", "(20ms delay) "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if ab, ba := TCIntfInfo(tc.params, emulator.AtoB), TCIntfInfo(tc.params, emulator.BtoA); ab != tc.ab || ba != tc.ba {
				t.Errorf("%v: %q %q, want %q %q", tc.params, ab, ba, tc.ab, tc.ba)
			}
		})
	}
}
