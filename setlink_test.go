package hymn

import (
	"errors"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
)

// TestSetLinkTyped changes a running link with typed values: only the
// direction asked for, only the parameters given.
func TestSetLinkTyped(t *testing.T) {
	testenv.Root(t)
	n := pairNet(t, topo.Params{"delay": "1ms", "loss": "0"})
	if err := n.SetLink("h2", "h1", Reverse, linkparams.Delay(20*time.Millisecond), linkparams.Loss(0.5)); err != nil {
		t.Fatal(err)
	}
	st, err := n.LinkStats("h1", "h2")
	if err != nil {
		t.Fatal(err)
	}
	// Reverse of h2->h1 is h1->h2, the link's a>b.
	if st.ForwardConfig.Delay != 20*time.Millisecond || st.ForwardConfig.Loss.Prob != 0.5 {
		t.Errorf("h1->h2 after SetLink: %v", st.ForwardConfig)
	}
	if st.ReverseConfig.Delay != time.Millisecond || st.ReverseConfig.Loss.Prob != 0 {
		t.Errorf("h2->h1 changed: %v", st.ReverseConfig)
	}
	for name, ps := range map[string][]linkparams.Param{
		"direction prefix": {linkparams.For(emulator.AtoB, linkparams.Delay(time.Millisecond))},
		"not live":         {linkparams.MTU(1400)},
		"out of range":     {linkparams.Loss(2)},
		"nothing":          nil,
	} {
		if err := n.SetLink("h1", "h2", BothDirections, ps...); !errors.Is(err, ErrLinkParams) {
			t.Errorf("%s: SetLink = %v, want ErrLinkParams", name, err)
		}
	}
}
