package capture

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
	"golang.org/x/sys/unix"
)

// Direction picks the packets a tap keeps, seen from its interface.
type Direction int

const (
	Both     Direction = iota
	Outgoing           // sent by the interface
	Incoming           // received by the interface
)

func (d Direction) String() string {
	switch d {
	case Outgoing:
		return "out"
	case Incoming:
		return "in"
	}
	return "both"
}

// Tap is one interface to capture on.
type Tap struct {
	// In runs fn in the interface's namespace (nil: the caller's).
	In        func(fn func() error) error
	Interface string
	Direction Direction
	// Name goes into the pcapng interface block (default Interface).
	Name, Description string
}

// Config is one capture file.
type Config struct {
	File    string
	Taps    []Tap
	Limit   int64 // bytes of packet data to write at most (default 100 MiB; <0 no limit)
	SnapLen int   // bytes kept of each packet (default 65535)
}

// DefaultLimit bounds a capture file unless asked otherwise.
const DefaultLimit = 100 << 20

// Stats is what a capture saw per tap.
type Stats struct {
	Interface     string
	Packets       uint64 // written
	Bytes         uint64
	LimitDropped  uint64 // seen but not written: the file reached its limit
	KernelDropped uint64 // dropped by the kernel (socket buffer full)
}

// Capture is a running capture.
type Capture struct {
	cfg     Config
	file    *os.File
	mu      sync.Mutex
	w       *pcapgo.NgWriter
	written int64
	taps    []*tap
	wg      sync.WaitGroup
	stop    chan struct{}
	once    sync.Once
	err     error
}

type tap struct {
	Tap
	fd    int
	index int
	stats Stats
}

// Start opens every tap and starts writing cfg.File.
func Start(cfg Config) (_ *Capture, err error) {
	if cfg.File == "" {
		return nil, errors.New("capture: no file")
	}
	if len(cfg.Taps) == 0 {
		return nil, errors.New("capture: no interface")
	}
	if cfg.Limit == 0 {
		cfg.Limit = DefaultLimit
	}
	if cfg.SnapLen == 0 {
		cfg.SnapLen = 65535
	}
	if cfg.SnapLen < 64 || cfg.SnapLen > 262144 {
		return nil, fmt.Errorf("capture: snap length %d out of range 64..262144", cfg.SnapLen)
	}
	c := &Capture{cfg: cfg, stop: make(chan struct{})}
	defer func() {
		if err != nil {
			c.closeTaps()
			if c.file != nil {
				// Best effort after the error being returned: the
				// half-made capture file is removed.
				_ = c.file.Close()
				_ = os.Remove(cfg.File)
			}
		}
	}()
	for i, t := range cfg.Taps {
		fd, err := openPacketSocket(t)
		if err != nil {
			return nil, fmt.Errorf("capture on %s: %w", t.Interface, err)
		}
		c.taps = append(c.taps, &tap{Tap: t, fd: fd, index: i, stats: Stats{Interface: t.Interface}})
	}
	c.file, err = createFile(cfg.File)
	if err != nil {
		return nil, err
	}
	for i, t := range c.taps {
		name := t.Name
		if name == "" {
			name = t.Interface
		}
		intf := pcapgo.NgInterface{Name: name, Description: t.Description, LinkType: layers.LinkTypeEthernet,
			SnapLength: uint32(cfg.SnapLen), TimestampResolution: 9, OS: "Linux"}
		if i == 0 {
			c.w, err = pcapgo.NewNgWriterInterface(c.file, intf, pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{OS: "Linux", Application: "hymn"}})
		} else {
			_, err = c.w.AddInterface(intf)
		}
		if err != nil {
			return nil, fmt.Errorf("capture: writing %s: %w", cfg.File, err)
		}
	}
	if err := c.w.Flush(); err != nil {
		return nil, fmt.Errorf("capture: writing %s: %w", cfg.File, err)
	}
	for _, t := range c.taps {
		c.wg.Add(1)
		go c.read(t)
	}
	return c, nil
}

// createFile opens a capture file for writing, mode 0600 (packets are
// private). As tcpdump -w, it replaces an earlier capture of the same
// name, but only a plain file of this user's with no other name: a
// symbolic link (O_NOFOLLOW), a FIFO or device, another user's file (one
// left in a shared directory for root to write into) or a hard link to a
// file elsewhere is refused, and nothing is truncated before that is
// known.
func createFile(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("capture: %s is a symbolic link: refusing to write through it", name)
	}
	if errors.Is(err, syscall.ENXIO) {
		// A FIFO nobody reads (O_NONBLOCK: the open does not wait).
		return nil, fmt.Errorf("capture: %s is not a regular file: refusing to overwrite it (remove it or name another file)", name)
	}
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	refuse := func(why string) (*os.File, error) {
		_ = f.Close() // refused: nothing was written
		return nil, fmt.Errorf("capture: %s %s: refusing to overwrite it (remove it or name another file)", name, why)
	}
	st, err := f.Stat()
	if err != nil {
		return refuse(fmt.Sprintf("cannot be examined (%v)", err))
	}
	sys, _ := st.Sys().(*syscall.Stat_t)
	switch {
	case !st.Mode().IsRegular():
		return refuse("is not a regular file")
	case sys != nil && int(sys.Uid) != os.Geteuid():
		return refuse(fmt.Sprintf("belongs to uid %d", sys.Uid))
	case sys != nil && sys.Nlink > 1:
		return refuse("has other hard links")
	}
	if err := f.Truncate(0); err != nil {
		_ = f.Close() // the truncate's error is the one to report
		return nil, fmt.Errorf("capture: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		_ = f.Close() // as above
		return nil, fmt.Errorf("capture: %w", err)
	}
	return f, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func openPacketSocket(t Tap) (int, error) {
	fd := -1
	open := func() error {
		ifi, err := interfaceIndex(t.Interface)
		if err != nil {
			return err
		}
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi}); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
			return err
		}
		if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20) != nil {
			// Without CAP_NET_ADMIN: the capped buffer is still a
			// working socket, so a refusal here is not an error.
			_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 16<<20)
		}
		tv := unix.NsecToTimeval(int64(50 * time.Millisecond))
		return unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	}
	var err error
	if t.In != nil {
		err = t.In(open)
	} else {
		err = open()
	}
	if err != nil && fd >= 0 {
		_ = unix.Close(fd) // the open error is the one reported
	}
	return fd, err
}

// interfaceIndex looks an interface up in the current namespace.
func interfaceIndex(name string) (int, error) {
	if len(name) == 0 || len(name) >= unix.IFNAMSIZ {
		return 0, fmt.Errorf("bad interface name %q", name)
	}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer func() { _ = unix.Close(fd) }() // a query socket: nothing to flush
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, fmt.Errorf("interface %s: %w", name, err)
	}
	return int(ifr.Uint32()), nil
}

func (c *Capture) read(t *tap) {
	defer c.wg.Done()
	buf := make([]byte, c.cfg.SnapLen)
	oob := make([]byte, 128)
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		n, oobn, _, from, err := unix.Recvmsg(t.fd, buf, oob, unix.MSG_TRUNC)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			// The interface went away (network stopped): the capture ends.
			return
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok {
			continue
		}
		out := ll.Pkttype == unix.PACKET_OUTGOING
		if (t.Direction == Outgoing && !out) || (t.Direction == Incoming && out) {
			continue
		}
		ts := stamp(oob[:oobn])
		if ts.IsZero() {
			ts = time.Now()
		}
		caplen := min(n, len(buf))
		c.write(t, ts, buf[:caplen], n)
	}
}

func stamp(oob []byte) time.Time {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_TIMESTAMPNS && len(m.Data) >= 16 {
			ts := *(*unix.Timespec)(unsafe.Pointer(&m.Data[0]))
			return time.Unix(ts.Unix())
		}
	}
	return time.Time{}
}

func (c *Capture) write(t *tap, ts time.Time, data []byte, length int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		return
	}
	if c.cfg.Limit > 0 && c.written+int64(len(data)) > c.cfg.Limit {
		t.stats.LimitDropped++
		return
	}
	err := c.w.WritePacket(gopacket.CaptureInfo{Timestamp: ts, CaptureLength: len(data), Length: length, InterfaceIndex: t.index}, data)
	if err != nil {
		if c.err == nil {
			c.err = err
		}
		return
	}
	c.written += int64(len(data))
	t.stats.Packets++
	t.stats.Bytes += uint64(length)
}

// File is the capture's file name.
func (c *Capture) File() string { return c.cfg.File }

// Stats returns the counters so far.
func (c *Capture) Stats() []Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Stats, len(c.taps))
	for i, t := range c.taps {
		out[i] = t.stats
	}
	return out
}

// Stop ends the capture after the packets already queued were read, writes
// interface statistics and closes the file. It is idempotent.
func (c *Capture) Stop() ([]Stats, error) {
	c.once.Do(func() {
		// Let what the kernel already queued be read: the sockets have a
		// 50 ms receive timeout.
		time.Sleep(60 * time.Millisecond)
		close(c.stop)
		c.wg.Wait()
		c.mu.Lock()
		defer c.mu.Unlock()
		now := time.Now()
		for _, t := range c.taps {
			var st unix.TpacketStats
			if s, err := unix.GetsockoptTpacketStats(t.fd, unix.SOL_PACKET, unix.PACKET_STATISTICS); err == nil {
				st = *s
			}
			t.stats.KernelDropped += uint64(st.Drops)
			if c.err == nil {
				c.err = c.w.WriteInterfaceStats(t.index, pcapgo.NgInterfaceStatistics{
					LastUpdate: now, PacketsReceived: t.stats.Packets + t.stats.LimitDropped,
					PacketsDropped: t.stats.KernelDropped + t.stats.LimitDropped,
				})
			}
		}
		if err := c.w.Flush(); err != nil && c.err == nil {
			c.err = err
		}
		c.w = nil
		if err := c.file.Close(); err != nil && c.err == nil {
			c.err = err
		}
		c.closeTaps()
	})
	return c.Stats(), c.err
}

func (c *Capture) closeTaps() {
	for _, t := range c.taps {
		if t.fd >= 0 {
			_ = unix.Close(t.fd) // a receive-only socket: nothing is lost
			t.fd = -1
		}
	}
}

var _ = runtime.GOOS

// Stopped reports whether Stop was called.
func (c *Capture) Stopped() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}
