package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/emulator/afpacket"
	"github.com/spf13/cobra"
)

// NewEmulateLinkCmd returns `hymn emulate link`: a standalone emulator
// between two existing interfaces of the current network namespace, as
// DPDS runs between two NICs. It forwards until interrupted (or for
// --duration) and then prints the final statistics of both directions.
func NewEmulateLinkCmd() *cobra.Command {
	var (
		ifA, ifB string
		ab, ba   string
		out      EmulateOutput
		coalesce time.Duration
		useDPDK  bool
		offloads bool
		perDir   bool
	)
	cmd := &cobra.Command{
		Use:   "link --a IF --b IF [params...]",
		Short: "Run the emulator between two existing interfaces (Ctrl-C prints statistics)",
		Long: `Forward every frame between interfaces --a and --b through the emulator,
with params (the emulator's text form, NetEm-like) in both directions and
--ab/--ba added for one direction only.

  hymn emulate link --a veth1 --b veth2 delay 10ms jitter 1ms
  hymn emulate link --a eth1 --b eth2 delay 5ms --ab "loss 1%" --ba "space 10mbit"

The interfaces must be up. Frames must be complete when they reach the
ports: turn off TX checksum offload and TSO/GSO on the interfaces that send
into them (ethtool -K IF tx off tso off gso off), or give --offloads, which
carries GSO super-frames and checksum-offload state through the emulator
(PACKET_VNET_HDR) so the offloads can stay on.

With --dpdk the ports are DPDK devices instead (hymn built with -tags dpdk
and libdpdk-dev installed): a VF's PCI address bound to vfio-pci, or a
virtual device given as NAME,ARGS:

  hymn emulate --dpdk --a net_af_packet0,iface=veth1 --b net_af_packet1,iface=veth2 delay 10ms`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if ifA == "" || ifB == "" || ifA == ifB {
				return fmt.Errorf("%w: emulate link needs two different interfaces, --a IF and --b IF", ErrUsage)
			}
			cfgs, err := emulateLinkConfigs(args, ab, ba)
			if err != nil {
				return err
			}
			if coalesce < 0 {
				return fmt.Errorf("%w: --coalesce %v: must be 0 (off) or positive", ErrUsage, coalesce)
			}
			fc := emulator.ForwarderConfig{AtoB: cfgs[0], BtoA: cfgs[1], Coalesce: coalesce, ThreadPerDirection: perDir}
			if coalesce == 0 {
				fc.Coalesce = -1
			}
			if useDPDK {
				return runEmulateDPDK(cmd.Context(), cmd.OutOrStdout(), ifA, ifB, fc, out)
			}
			return RunEmulateLinkOffloads(cmd.Context(), cmd.OutOrStdout(), ifA, ifB, fc, out, offloads)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&ifA, "a", "", "interface A")
	fl.StringVar(&ifB, "b", "", "interface B")
	fl.StringVar(&ab, "ab", "", "extra params for the direction A→B")
	fl.StringVar(&ba, "ba", "", "extra params for the direction B→A")
	fl.DurationVar(&out.Every, "stats-every", 0, "print statistics at this interval (0: only at the end)")
	fl.DurationVar(&out.Duration, "duration", 0, "stop after this long (0: run until interrupted)")
	fl.BoolVar(&out.JSON, "json", false, "print statistics as JSON, one object per line (times in ns)")
	fl.DurationVar(&coalesce, "coalesce", 30*time.Microsecond, "under load, sleep this long between reads instead of being woken by each frame\n(like ethtool -C rx-usecs; 0: wake on every frame)")
	fl.BoolVar(&offloads, "offloads", false, "carry GSO super-frames and checksum offload through the emulator (AF_PACKET ports only)")
	fl.BoolVar(&perDir, "thread-per-direction", false, "forward each direction on a thread of its own (default: one thread for both, which\ntakes an answer such as a TCP ACK along without a wake-up; DPDK ports always have two)")
	fl.BoolVar(&useDPDK, "dpdk", false, "the ports are DPDK devices (PCI address or NAME,ARGS vdev); needs a build with -tags dpdk")
	return cmd
}

// emulateLinkConfigs parses the shared params and each direction's extras.
func emulateLinkConfigs(args []string, ab, ba string) ([2]emulator.Config, error) {
	var out [2]emulator.Config
	for i, extra := range []string{ab, ba} {
		all := append(append([]string{}, args...), strings.Fields(extra)...)
		c, err := emulator.ParseArgs(all)
		if err != nil {
			return out, fmt.Errorf("%w: %s: %v", ErrUsage, emulator.Direction(i), err)
		}
		out[i] = c
	}
	return out, nil
}

// EmulateOutput says how long a standalone emulator runs and how it
// reports.
type EmulateOutput struct {
	Every    time.Duration // statistics at this interval too (0: only at the end)
	Duration time.Duration // stop after this long (0: when the context ends)
	JSON     bool          // statistics as JSON lines instead of text
}

// RunEmulateLink opens AF_PACKET ports on ifA and ifB (in the calling
// namespace), forwards with fc until ctx ends or out.Duration passes, and
// writes the statistics to w.
func RunEmulateLink(ctx context.Context, w io.Writer, ifA, ifB string, fc emulator.ForwarderConfig, out EmulateOutput) error {
	return RunEmulateLinkOffloads(ctx, w, ifA, ifB, fc, out, false)
}

// RunEmulateLinkOffloads is RunEmulateLink with the ports carrying
// offload state when offloads is true (see afpacket.Options.Offloads).
func RunEmulateLinkOffloads(ctx context.Context, w io.Writer, ifA, ifB string, fc emulator.ForwarderConfig, out EmulateOutput, offloads bool) (err error) {
	pa, err := afpacket.Open(ifA, afpacket.Options{Offloads: offloads})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closePort(ifA, pa)) }()
	pb, err := afpacket.Open(ifB, afpacket.Options{Offloads: offloads})
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closePort(ifB, pb)) }()
	if fc.MTU == 0 {
		// Frame buffers follow the larger MTU, so jumbo frames pass whole.
		fc.MTU = max(pa.MTU(), pb.MTU())
	}
	return forwardUntilDone(ctx, w, ifA, ifB, pa, pb, fc, out)
}

// closePort closes a port the command opened, saying which one failed.
func closePort(name string, p io.Closer) error {
	if err := p.Close(); err != nil {
		return fmt.Errorf("closing port %s: %w", name, err)
	}
	return nil
}

// forwardUntilDone runs an emulator between two open ports until ctx ends
// or out.Duration passes, printing statistics every out.Every and at the
// end.
func forwardUntilDone(ctx context.Context, w io.Writer, ifA, ifB string, pa, pb emulator.Port, fc emulator.ForwarderConfig, out EmulateOutput) error {
	f, err := emulator.NewForwarder(pa, pb, fc)
	if err != nil {
		return err
	}
	names := [2]string{ifA + ">" + ifB, ifB + ">" + ifA}
	report := func(final bool) {
		if out.JSON {
			_ = json.NewEncoder(w).Encode(struct {
				Final      bool                               `json:"final"`
				Directions map[string]emulator.DirectionStats `json:"directions"`
			}{final, map[string]emulator.DirectionStats{names[0]: f.Stats(emulator.AtoB), names[1]: f.Stats(emulator.BtoA)}})
			return
		}
		if final {
			_, _ = fmt.Fprintln(w, "*** Final statistics")
		}
		WriteDirectionStats(w, names[0], f.Stats(emulator.AtoB))
		WriteDirectionStats(w, names[1], f.Stats(emulator.BtoA))
	}
	if !out.JSON {
		_, _ = fmt.Fprintf(w, "*** Emulating %s <-> %s (Ctrl-C to stop)\n", ifA, ifB)
		_, _ = fmt.Fprintf(w, "%s: %s\n%s: %s\n", names[0], showConfig(f.Config(emulator.AtoB)), names[1], showConfig(f.Config(emulator.BtoA)))
	}
	f.Start()
	if out.Duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, out.Duration)
		defer cancel()
	}
	var tick <-chan time.Time
	if out.Every > 0 {
		t := time.NewTicker(out.Every)
		defer t.Stop()
		tick = t.C
	}
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick:
			report(false)
		}
	}
	f.Stop()
	report(true)
	return nil
}

func showConfig(c emulator.Config) string {
	if s := c.String(); s != "" {
		return s
	}
	return "(no impairment)"
}

// WriteDirectionStats prints one direction's counters in one block:
// received = sent + dropped (by cause) + queued, then the realised delay
// and the transmitter's lateness.
func WriteDirectionStats(w io.Writer, name string, d emulator.DirectionStats) {
	s := d.Emulator
	_, _ = fmt.Fprintf(w, "%s: received %d (%d B) sent %d (%d B) dropped %d queued %d\n",
		name, s.Received, s.ReceivedBytes, s.Sent, s.SentBytes, s.Dropped(), s.Queued)
	_, _ = fmt.Fprintf(w, "  drops: policed %d spacer %d loss %d buffer_full %d | no_buffer %d rx_ring %d rx_truncated %d tx_fail %d discarded %d\n",
		s.Policed, s.SpacerDropped, s.Lost, s.BufferFull, d.NoBuffer, d.RxPort.RxRingDrops, d.RxPort.RxTruncated, d.TxPort.TxDropped, d.Discarded)
	_, _ = fmt.Fprintf(w, "  reordered %d  max queue %d  rate %.0f pkt/s  seed %d  wakeups %d\n", s.Reordered, s.MaxQueued, s.Rate, s.Seed, d.RxPort.Wakeups)
	_, _ = fmt.Fprintf(w, "  accounting: %s\n", d.Accounting())
	if s.Delay.Count > 0 {
		_, _ = fmt.Fprintf(w, "  delay mean %v std %v p50 %v p99 %v max %v | lateness p50 %v p99 %v max %v\n",
			s.Delay.Mean, s.Delay.Std, s.Delay.P50, s.Delay.P99, s.Delay.Max, s.Lateness.P50, s.Lateness.P99, s.Lateness.Max)
	}
}
