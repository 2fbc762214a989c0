package vm

import "errors"

// Errors callers can test for (errors.Is), all of package vm's in one
// file. Each is returned wrapped with what it is about.

// ErrAgentGone is returned when the connection to the guest agent ended
// (the VM stopped) while a request was pending.
var ErrAgentGone = errors.New("guest agent connection closed")

var (
	// ErrBadParam marks an invalid VM parameter; the message names it.
	ErrBadParam = errors.New("invalid VM parameter")
	// ErrNoKVM is returned when accel=kvm is demanded and /dev/kvm is not
	// usable.
	ErrNoKVM = errors.New("KVM is not available")
)
