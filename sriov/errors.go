package sriov

import "errors"

// Errors callers can test for (errors.Is), all of package sriov's in one
// file. Each is returned wrapped with what it is about.

// Allocation errors.
var (
	ErrNoFreePair = errors.New("no free VF pair")
	ErrNoFreeVLAN = errors.New("no free VLAN")
)

// ErrInventory marks a bad pair inventory (file, flags or spec string).
var ErrInventory = errors.New("bad SR-IOV inventory")

// Discovery and setup errors, each wrapped with the PF or VF it is about.
var (
	ErrUnknownPF       = errors.New("no such SR-IOV physical function")
	ErrNotSRIOV        = errors.New("interface has no SR-IOV capability")
	ErrTooManyVFs      = errors.New("more VFs than the device supports")
	ErrVFIOUnavailable = errors.New("vfio unavailable on this machine")
	ErrNoHardware      = errors.New("no SR-IOV hardware on this machine")
)

// ErrVFsInUse marks a VF count change refused because it would destroy
// VFs someone configured.
var ErrVFsInUse = errors.New("VFs in use")
