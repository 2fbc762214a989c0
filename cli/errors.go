package cli

import "errors"

// ErrUsage marks errors caused by bad user input; the command exits with status 2.
var ErrUsage = errors.New("usage error")
