package nodes

import "errors"

// Errors callers can test for (errors.Is), all of package nodes's in one
// file. Each is returned wrapped with what it is about.

// ErrBPFSTP is returned for a BPF switch asked to run STP.
var ErrBPFSTP = errors.New("STP needs --switch lxbr or ovsbr: a bpf switch has no spanning tree")

// ErrClosed is returned when a closed node is used.
var ErrClosed = errors.New("node is closed")
