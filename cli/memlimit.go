package cli

import (
	"os"
	"runtime/debug"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/linkparams"
)

// Memory: a build's garbage (a netlink receive buffer per request, tens of
// thousands of requests for 2000 nodes) is freed long before the Go runtime
// returns it to the kernel on its own pace, so a 2000-node run peaked at
// 29-36 MiB of RSS while its live heap never passed 4 MiB; on a loaded
// machine the background scavenger falls behind and the peak grows. A soft
// memory limit makes the runtime collect and give memory back before the
// heap grows past it. It is sized by the topology (live heap is about 2
// KiB a node; the limit leaves four times that, and at least 16 MiB), and
// left alone when the user set GOMEMLIMIT, when a link carries hymn's
// emulator, whose queues hold frames in the heap (delay x rate) and must
// never make the collector run flat out, and for hymn measure, whose
// generator and receivers are timed.
const (
	memLimitFloor   = 16 << 20
	memLimitPerNode = 8 << 10
)

// applyMemoryLimit sets the soft memory limit for a network about to be
// built, as above; it reports the limit set (0 for none).
func applyMemoryLimit(net *hymn.Network, f *mnFlags) int64 {
	if _, set := os.LookupEnv("GOMEMLIMIT"); set || f.action != nil {
		return 0
	}
	plan := net.Plan()
	for _, l := range plan.Links {
		if linkparams.NeedsEmulator(l.Params) {
			return 0
		}
	}
	limit := max(int64(memLimitFloor), int64(len(plan.Nodes))*memLimitPerNode)
	debug.SetMemoryLimit(limit)
	return limit
}
