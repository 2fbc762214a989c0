package cli

import "github.com/spf13/cobra"

func newEmulateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "emulate",
		Short: "The DPDS-style link emulator: simulation and benchmarks",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(emulateSubcommands()...)
	return cmd
}
