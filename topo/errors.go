package topo

import (
	"errors"

	"github.com/hymn-net/hymn/internal/yamlpos"
)

// Errors callers can test for (errors.Is), all of package topo's in one
// file. Each is returned wrapped with what it is about.

// ErrDuplicateAddress is returned (wrapped) when two interfaces that share
// a LAN, or one node, are given the same IP address: the network would
// build, but ARP answers from both and traffic goes to either.
var ErrDuplicateAddress = errors.New("duplicate address")

// ErrNoPython is returned (wrapped) when python3 is not installed.
var ErrNoPython = errors.New("python3 is not installed")

// ErrTooLarge marks an input beyond one of the limits (node count, file
// size, custom-topology output). The message names the limit and the option
// that raises it.
var ErrTooLarge = errors.New("too large")

// ErrBadSpec marks a spec string that cannot be used.
var ErrBadSpec = errors.New("bad spec")

// ErrDuplicateNode is returned (wrapped) when a name is added twice.
var ErrDuplicateNode = errors.New("duplicate node name")

// ErrUnknownNode is returned (wrapped) when a link names a node that was
// never added.
var ErrUnknownNode = errors.New("unknown node")

// ErrBadFile matches every FileError (errors.Is).
var ErrBadFile = yamlpos.ErrBadFile
