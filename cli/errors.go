package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Errors callers can test for (errors.Is), all of package cli's in one
// file.

// ErrUsage marks errors caused by bad user input; the command exits with status 2.
var ErrUsage = errors.New("usage error")

// ErrNoGraphviz is returned (wrapped) when SVG output is asked for and
// Graphviz's dot is not installed.
var ErrNoGraphviz = errors.New("graphviz is not installed")

// usageArgs makes a positional-argument check's error a usage error (exit
// status 2), as cobra's own flag errors are: `hymn run` without a file is
// bad input, not a failure.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
			return fmt.Errorf("%w: %s: %v", ErrUsage, name, err)
		}
		return nil
	}
}
