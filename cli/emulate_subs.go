package cli

import "github.com/spf13/cobra"

// emulateSubcommands lists the emulate subcommands that exist so far.
func emulateSubcommands() []*cobra.Command { return nil }
