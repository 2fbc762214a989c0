package cli

import "github.com/spf13/cobra"

func newEmulateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "emulate",
		Short: "The DPDS-style link emulator: simulation and benchmarks",
		Long: `The link emulator engine (package emulator): delay with adaptive correlation,
jitter, reordering, policing, spacing and loss, per direction.

  hymn emulate sim delay 10ms 1ms distribution normal --rate 10gbit --json
  hymn emulate bench --json`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(emulateSubcommands()...)
	return cmd
}
