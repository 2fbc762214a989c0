package nodes

import (
	"os"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestEnlargePortBuffers: a process's packet sockets get portRcvBuf (the
// kernel reports twice what was set), its other sockets keep theirs. The
// test's own process stands in for ovs-vswitchd.
func TestEnlargePortBuffers(t *testing.T) {
	testenv.Root(t)
	pkt, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Close(pkt) }() // only inspected
	udp, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Close(udp) }() // only inspected
	udpBefore, _ := unix.GetsockoptInt(udp, unix.SOL_SOCKET, unix.SO_RCVBUF)
	n, err := enlargePortBuffers(os.Getpid())
	if err != nil || n < 1 {
		t.Fatalf("enlarged %d sockets: %v", n, err)
	}
	if got, _ := unix.GetsockoptInt(pkt, unix.SOL_SOCKET, unix.SO_RCVBUF); got != 2*portRcvBuf {
		t.Errorf("packet socket's receive buffer %d, want %d", got, 2*portRcvBuf)
	}
	if got, _ := unix.GetsockoptInt(udp, unix.SOL_SOCKET, unix.SO_RCVBUF); got != udpBefore {
		t.Errorf("a UDP socket's receive buffer went from %d to %d", udpBefore, got)
	}
	// A second pass finds nothing left to do.
	if n, err := enlargePortBuffers(os.Getpid()); err != nil || n != 0 {
		t.Errorf("second pass enlarged %d: %v", n, err)
	}
}
