package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/spf13/cobra"
)

// newCalibrateCmd is `hymn calibrate`: the host's thread wake-up latency,
// the figure that bounds an emulated link's punctuality on this machine
// and that makes benchmark figures from two machines comparable.
func newCalibrateCmd(stdout io.Writer) *cobra.Command {
	var (
		jsonOut bool
		samples int
		sleep   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Measure this machine's thread wake-up latency (what bounds an emulated link's punctuality)",
		Long: `calibrate measures how fast this machine runs a thread that was asleep, as hymn's
forwarding threads see it (their scheduling class, the CPU idle request of HYMN_CPU_IDLE):

  timer wake-up   how late a thread that sleeps --sleep in nanosleep runs (a departure's wait)
  event wake-up   how long after one thread signals an eventfd the thread blocked on it runs
                  (a frame's arrival)

An emulated link at zero delay adds roughly the event wake-up to a sparse frame's latency, so
figures taken on two machines compare only beside these. bench/emulated.sh and hymn measure
print them first. Takes about half a second.`,
		Example: "  hymn calibrate\n  hymn calibrate --json --samples 20000",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if samples <= 0 || samples > 1_000_000 {
				return fmt.Errorf("%w: --samples %d: want 1 to 1000000", ErrUsage, samples)
			}
			if sleep <= 0 || sleep > 10*time.Millisecond {
				return fmt.Errorf("%w: --sleep %v: want more than 0 and at most 10ms", ErrUsage, sleep)
			}
			if err := emulator.CheckCPUIdleEnv(); err != nil {
				return fmt.Errorf("%w: %v", ErrUsage, err)
			}
			h, err := emulator.MeasureHostWake(cmd.Context(), emulator.HostWakeConfig{Samples: samples, Sleep: sleep})
			if err != nil {
				return err
			}
			if jsonOut {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(h)
			}
			_, err = fmt.Fprintf(stdout, "*** %s\n", h)
			return err
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the result as JSON")
	cmd.Flags().IntVar(&samples, "samples", 2000, "wake-ups of each kind to measure")
	cmd.Flags().DurationVar(&sleep, "sleep", 50*time.Microsecond, "the timer wake-up's sleep")
	return cmd
}
