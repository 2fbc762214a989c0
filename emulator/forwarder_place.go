package emulator

import (
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Placement of a forwarding thread. On a veth the kernel delivers a
// frame to the forwarder's RX ring in the softirq of the CPU that sent it
// (veth_xmit → netif_rx queues to the sending CPU's backlog), and the
// frames the forwarder sends are delivered to the far end on the
// forwarder's own CPU. A forwarding thread that shares its CPU with the
// sender preempts it (it runs under SCHED_FIFO) and the whole path runs
// on one CPU: on the 2-core development VM the 64-byte rate then fell to
// 80 kpps against 530 kpps with the thread on the other CPU, and the
// scheduler, which has no reason to move a real-time task off a CPU that
// only runs ordinary tasks, kept whichever placement the first wake-up
// picked for the whole run (the spread 0.32–0.99 of emulated / plain
// between runs).
//
// So every placeInterval a busy thread compares the packets each CPU's
// softirqs processed (/proc/net/softnet_stat) with the frames it forwarded:
// its own CPU processes about one packet per forwarded frame (the far
// end's delivery); clearly more means the sender's delivery runs there
// too, and the thread moves off that CPU (its allowed set minus the
// current CPU; the next check may move it back if the sender follows).
//
// A thread that serves both directions of a link counts the frames of
// both; a CPU it shares with the sender of one direction processes that
// direction's frames on top of the thread's own deliveries. With traffic
// one way (the 64-byte rate) that is the test a thread per direction
// makes. With TCP, whose ACKs are about as many frames as its data
// super-frames, either host's share is near the threshold.

const (
	placeInterval = 100 * time.Millisecond
	// placeMinFrames: below this many frames per interval (20 kpps) the
	// sharing costs little and the counters say little.
	placeMinFrames = 2000
	// placeHold is the least time between two moves.
	placeHold = 300 * time.Millisecond
)

type placement struct {
	fd       int
	buf      []byte
	prev     []uint64
	spare    []uint64
	last     int64 // time of the last check (forwarder clock)
	moved    int64
	frames   uint64 // frames forwarded at the last check
	allowed  unix.CPUSet
	disabled bool
}

func (p *placement) init() {
	p.fd = -1
	if err := unix.SchedGetaffinity(0, &p.allowed); err != nil || p.allowed.Count() < 2 {
		p.disabled = true
		return
	}
}

// open opens the counters on the first busy interval: most links of a
// large topology never carry 20 kpps, and need neither the descriptor nor
// the buffer (a line is about 120 bytes per CPU; read grows the buffer
// on a machine with many).
func (p *placement) open() bool {
	if p.fd >= 0 {
		return true
	}
	fd, err := unix.Open("/proc/net/softnet_stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		p.disabled = true
		return false
	}
	p.fd = fd
	p.buf = make([]byte, 4<<10)
	return true
}

func (p *placement) close() {
	if p.fd >= 0 {
		_ = unix.Close(p.fd) // read-only /proc file
		p.fd = -1
	}
}

// check runs at most every placeInterval; frames is the thread's count
// of forwarded frames so far.
func (p *placement) check(now int64, frames uint64) {
	if p.disabled || now-p.last < int64(placeInterval) {
		return
	}
	p.last = now
	f := frames - p.frames
	p.frames = frames
	if f < placeMinFrames {
		// Quiet: no reading, and the next busy interval starts afresh.
		p.prev = nil
		return
	}
	if !p.open() {
		return
	}
	cur, ok := p.read()
	if !ok {
		return
	}
	// The first busy check has no previous counters (prev is nil).
	prev := p.prev
	p.prev, p.spare = cur, prev
	if len(prev) != len(cur) || now-p.moved < int64(placeHold) {
		return
	}
	my := getcpu()
	if my < 0 || my >= len(cur) {
		return
	}
	excess := int64(cur[my]-prev[my]) - int64(f)
	if !sharesWithSender(excess, f) {
		return
	}
	set := p.allowed
	set.Clear(my)
	if set.Count() == 0 {
		return
	}
	if unix.SchedSetaffinity(0, &set) == nil {
		p.moved = now
	}
}

// sharesWithSender decides from the packets the thread's CPU processed
// beyond the frames it forwarded itself (excess) whether the sender's
// deliveries run there too: they add about one packet per frame, so more
// than half a frame's worth means most of them.
func sharesWithSender(excess int64, frames uint64) bool {
	return excess > int64(frames/2)
}

// read parses the first column (packets processed) of every CPU's line;
// the 13th column, where the kernel has it, is the CPU number.
func (p *placement) read() ([]uint64, bool) {
	n, err := unix.Pread(p.fd, p.buf, 0)
	for err == nil && n == len(p.buf) && len(p.buf) < 1<<20 {
		p.buf = make([]byte, 2*len(p.buf))
		n, err = unix.Pread(p.fd, p.buf, 0)
	}
	if err != nil || n == 0 || n == len(p.buf) {
		return nil, false
	}
	return parseSoftnet(p.buf[:n], p.spare[:0])
}

func parseSoftnet(b []byte, out []uint64) ([]uint64, bool) {
	for len(b) > 0 {
		end := 0
		for end < len(b) && b[end] != '\n' {
			end++
		}
		line := b[:end]
		if end < len(b) {
			end++
		}
		b = b[end:]
		var fields [13]uint64
		nf := 0
		for i := 0; i < len(line) && nf < len(fields); {
			for i < len(line) && line[i] == ' ' {
				i++
			}
			if i == len(line) {
				break
			}
			var v uint64
			for i < len(line) && line[i] != ' ' {
				c := line[i]
				switch {
				case c >= '0' && c <= '9':
					v = v<<4 | uint64(c-'0')
				case c >= 'a' && c <= 'f':
					v = v<<4 | uint64(c-'a'+10)
				default:
					return nil, false
				}
				i++
			}
			fields[nf] = v
			nf++
		}
		if nf == 0 {
			continue
		}
		cpu := len(out)
		if nf >= 13 {
			cpu = int(fields[12])
		}
		if cpu > 4096 {
			return nil, false
		}
		for len(out) <= cpu {
			out = append(out, 0)
		}
		out[cpu] = fields[0]
	}
	return out, len(out) > 0
}

func getcpu() int {
	var cpu uint32
	if _, _, e := unix.RawSyscall(unix.SYS_GETCPU, uintptr(unsafe.Pointer(&cpu)), 0, 0); e != 0 {
		return -1
	}
	return int(cpu)
}
