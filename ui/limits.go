package ui

import (
	"fmt"
	"os"

	"github.com/hymn-net/hymn/capture"
)

// minCaptureBytes is the smallest file limit a capture from the view
// starts with: below it the byte budget is spent.
const minCaptureBytes = 64 << 10

// captureRoomLocked says whether one more capture fits the view's limits
// (Options.MaxCaptures running, Options.MaxCaptureBytes on disk) and
// returns the per-file limit it gets: half of the bytes left (an emulated
// link writes two files), at most capture.DefaultLimit. A running capture
// holds its files' limits, a stopped one what it wrote (kept for
// download until the view closes). a.mu is held.
func (a *api) captureRoomLocked() (int64, error) {
	running := 0
	var held int64
	for _, c := range a.caps {
		if c.Running {
			running++
			held += c.lc.Spec.Limit * int64(len(c.paths))
			continue
		}
		for _, p := range c.paths {
			if st, err := os.Stat(p); err == nil {
				held += st.Size()
			}
		}
	}
	if running >= a.opts.MaxCaptures {
		return 0, fmt.Errorf("%w: %d captures are running, the view's limit: stop one first", errTooMany, running)
	}
	limit := min(capture.DefaultLimit, (a.opts.MaxCaptureBytes-held)/2)
	if limit < minCaptureBytes {
		return 0, fmt.Errorf("%w: the view's captures hold %d of the %d bytes they may take: no room for another", errTooMany, held, a.opts.MaxCaptureBytes)
	}
	return limit, nil
}
