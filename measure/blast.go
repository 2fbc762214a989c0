package measure

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"golang.org/x/sys/unix"
)

// GeneratorResult is what the generator sent alone.
type GeneratorResult struct {
	Generator string  `json:"generator"` // afxdp, afpacket or udp
	PPS       float64 `json:"pps"`       // packets/s from one core
	// Fallback says why a faster generator could not be used (auto).
	Fallback string `json:"fallback,omitempty"`
}

// generatorBatch is the batch GeneratorRate sends, the trials' default.
const generatorBatch = 64

// GeneratorRate measures generator g alone: one thread sends frame-sized
// packets to dst as fast as the kernel takes them, for d, and returns
// packets/s. Point dst at something that discards cheaply (a veth whose
// peer drops frames not addressed to it) so the number is the sender's
// cost on one core. The sockets are made in the namespace in runs in
// (the caller's when nil).
func GeneratorRate(ctx context.Context, in RunFunc, dst netip.AddrPort, frame int, g Generator, d time.Duration) (GeneratorResult, error) {
	if frame == 0 {
		frame = MinFrame
	}
	if frame < MinFrame || frame > MaxFrame {
		return GeneratorResult{}, fmt.Errorf("frame size %d B out of range %d..%d", frame, MinFrame, MaxFrame)
	}
	fd := -1
	var snd sender
	var fallback string
	open := func() error {
		var err error
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return err
		}
		if err := unix.Connect(fd, &unix.SockaddrInet4{Port: int(dst.Port()), Addr: dst.Addr().As4()}); err != nil {
			return err
		}
		snd, fallback, err = openSender(g, []int{fd}, dst, frame, generatorBatch)
		return err
	}
	var err error
	if in != nil {
		err = in(open)
	} else {
		err = open()
	}
	if snd != nil {
		defer snd.close()
	}
	if fd >= 0 {
		defer func() { _ = unix.Close(fd) }() // a send-only socket: nothing is lost if close fails
	}
	if err != nil {
		return GeneratorResult{}, fmt.Errorf("generator to %s: %w", dst, err)
	}
	type res struct {
		pps float64
		err error
	}
	ch := make(chan res, 1)
	go func() {
		emulator.RealTimeThread(0)
		var sent uint64
		count := func([]byte) { sent++ }
		start := monotonic()
		end := start + int64(d)
		now := start
		for now < end && ctx.Err() == nil {
			room := snd.prepare(generatorBatch, 0)
			if room == 0 {
				emulator.ThreadSleep(busyWait) // see xdpSender.kick
			}
			stamp := realtime()
			for k := range room {
				b := snd.payload(k)
				binary.LittleEndian.PutUint64(b, sent+uint64(k))
				binary.LittleEndian.PutUint64(b[8:], uint64(stamp))
			}
			if err := snd.commit(room, count); err != nil {
				ch <- res{0, err}
				return
			}
			now = monotonic()
		}
		ch <- res{float64(sent) / (float64(now-start) / 1e9), ctx.Err()}
	}()
	r := <-ch
	return GeneratorResult{Generator: snd.kind().String(), PPS: r.pps, Fallback: fallback}, r.err
}

// GeneratorCheckDefault is how long a report's generator rate is
// measured: 300 ms holds some 300 000 sends, far more than the noise of
// the machine's load needs, and adds little to a measurement.
const GeneratorCheckDefault = 300 * time.Millisecond
