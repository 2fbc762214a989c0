package hymn

import (
	"errors"

	"github.com/hymn-net/hymn/internal/tools"
	"github.com/hymn-net/hymn/linkparams"
	"github.com/hymn-net/hymn/topo"
)

// Errors callers can test for (errors.Is), all of package hymn's in one
// file. Each is returned wrapped with what it is about.

// ErrDPDK marks errors of emulated links on DPDK ports; a binary built
// without DPDK also matches dpdk.ErrNotBuilt.
var ErrDPDK = errors.New("DPDK ports")

// ErrSRIOV marks SR-IOV backend errors.
var ErrSRIOV = errors.New("SR-IOV links")

// ErrUnknownLink is returned for a pair of nodes that no link joins.
var ErrUnknownLink = errors.New("no such link")

// ErrNoEmulator is returned (wrapped) for a link built without an emulator.
var ErrNoEmulator = errors.New("link has no emulator")

// ErrLinkParams marks invalid link parameters (linkparams.ErrInvalid).
var ErrLinkParams = linkparams.ErrInvalid

var (
	ErrNotRoot     = errors.New("hymn must run as root")
	ErrMissingTool = tools.ErrMissing
	ErrUnknownNode = topo.ErrUnknownNode // one value: errors.Is matches topo's and the network's
	ErrNotBuilt    = errors.New("network is not built")
)
