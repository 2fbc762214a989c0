package cli

import "github.com/spf13/cobra"

// emulateSubcommands lists the emulate subcommands.
func emulateSubcommands() []*cobra.Command {
	return []*cobra.Command{NewEmulateSimCmd(), NewEmulateBenchCmd(), NewEmulateLinkCmd()}
}
