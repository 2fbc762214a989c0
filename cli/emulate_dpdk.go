package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/emulator/dpdk"
)

// runEmulateDPDK is the standalone emulator on DPDK ports. In a build
// without the dpdk tag, dpdk.Init says so and the command exits 2.
func runEmulateDPDK(ctx context.Context, w io.Writer, devA, devB string, fc emulator.ForwarderConfig, out EmulateOutput) (err error) {
	if err := dpdk.Init(dpdk.Config{}); err != nil {
		if errors.Is(err, dpdk.ErrNotBuilt) {
			return fmt.Errorf("%w: --dpdk: %v", ErrUsage, err)
		}
		return fmt.Errorf("starting DPDK: %w", err)
	}
	// Deferred first, so it runs last, after the ports are closed.
	defer func() {
		if cerr := dpdk.Cleanup(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("DPDK cleanup: %w", cerr))
		}
	}()
	open := func(dev string) (*dpdk.Port, string, error) {
		name, args, isVdev := strings.Cut(dev, ",")
		if isVdev {
			if err := dpdk.CreateVdev(name, args); err != nil {
				return nil, name, fmt.Errorf("DPDK device %s: %w", dev, err)
			}
		}
		// A short idle sleep instead of pure polling: on a small machine a
		// polling thread per direction would starve the traffic it carries.
		p, err := dpdk.Open(name, dpdk.Options{IdleSleep: 10 * time.Microsecond})
		return p, name, err
	}
	pa, nameA, err := open(devA)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closePort(nameA, pa)) }()
	pb, nameB, err := open(devB)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closePort(nameB, pb)) }()
	return forwardUntilDone(ctx, w, nameA, nameB, pa, pb, fc, out)
}
