package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newEmulateCmd() *cobra.Command {
	// hymn emulate --a IF --b IF params... is the standalone emulator
	// (DPDS-style) itself; sim, bench and link are its subcommands.
	link := NewEmulateLinkCmd()
	cmd := &cobra.Command{
		Use:   "emulate [--a IF --b IF params...]",
		Short: "The DPDS-style link emulator: standalone between two interfaces, simulation, benchmarks",
		Long: `The link emulator (package emulator): delay with adaptive correlation, jitter,
reordering, policing, spacing and loss, per direction.

  hymn emulate --a veth1 --b veth2 delay 10ms 1ms distribution normal   (same as: hymn emulate link ...)
  hymn emulate sim delay 10ms 1ms distribution normal --rate 10gbit --json
  hymn emulate bench --json`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("a") && !cmd.Flags().Changed("b") && len(args) == 0 {
				return cmd.Help()
			}
			return link.RunE(cmd, args)
		},
	}
	cmd.Flags().AddFlagSet(link.Flags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return fmt.Errorf("%w: %v", ErrUsage, err) })
	cmd.AddCommand(emulateSubcommands()...)
	return cmd
}
