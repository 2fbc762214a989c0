package emulator

import "errors"

// Errors callers can test for (errors.Is), all of package emulator's in one
// file. Each is returned wrapped with what it is about.

// ErrInvalidConfig is matched by every *ConfigError through errors.Is.
var ErrInvalidConfig = errors.New("invalid emulator configuration")

// ErrPortClosed is returned by a port used after Close.
var ErrPortClosed = errors.New("port closed")

// ErrSimTooLarge is returned when a run would need more memory than the
// simulator allows for its bookkeeping.
var ErrSimTooLarge = errors.New("simulation too large")
