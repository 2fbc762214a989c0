package measure

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"golang.org/x/sys/unix"
)

// GeneratorRate measures the generator alone: one thread sends frame-sized
// UDP packets to dst as fast as sendmmsg takes them, for d, and returns
// packets/s. Point dst at something that discards cheaply (a dummy
// interface's neighbour) so the number is the sender's cost: the UDP
// stack, the qdisc and the driver's free, on one core.
func GeneratorRate(ctx context.Context, in RunFunc, dst netip.AddrPort, frame, batchSize int, d time.Duration) (float64, error) {
	if frame == 0 {
		frame = MinFrame
	}
	if frame < MinFrame || frame > MaxFrame {
		return 0, fmt.Errorf("frame size %d B out of range %d..%d", frame, MinFrame, MaxFrame)
	}
	if batchSize <= 0 {
		batchSize = 64
	}
	fd := -1
	open := func() error {
		var err error
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		return unix.Connect(fd, &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()})
	}
	var err error
	if in != nil {
		err = in(open)
	} else {
		err = open()
	}
	if fd >= 0 {
		defer unix.Close(fd)
	}
	if err != nil {
		return 0, fmt.Errorf("generator socket to %s: %w", dst, err)
	}
	type res struct {
		pps float64
		err error
	}
	ch := make(chan res, 1)
	go func() {
		emulator.RealTimeThread(0)
		b := newBatch(batchSize, frame-frameHeaders, 0)
		var sent uint64
		start := monotonic()
		end := start + int64(d)
		now := start
		for now < end && ctx.Err() == nil {
			stamp := realtime()
			for k := range batchSize {
				binary.LittleEndian.PutUint64(b.bufs[k], sent+uint64(k))
				binary.LittleEndian.PutUint64(b.bufs[k][8:], uint64(stamp))
			}
			n, err := sendmmsg(fd, b, 0, batchSize)
			if err != nil && !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.ENOBUFS) && !errors.Is(err, unix.EAGAIN) {
				ch <- res{0, err}
				return
			}
			sent += uint64(max(n, 0))
			now = monotonic()
		}
		ch <- res{float64(sent) / (float64(now-start) / 1e9), ctx.Err()}
	}()
	r := <-ch
	return r.pps, r.err
}
