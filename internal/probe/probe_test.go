package probe

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
	"golang.org/x/sys/unix"
)

// The receiver's buffer is what was asked whatever net.core.rmem_max says:
// asked for twice rmem_max, the kernel reports twice that (its bookkeeping
// included); capped, it would report twice rmem_max.
func TestReadBufferBeyondRmemMax(t *testing.T) {
	testenv.Root(t)
	b, err := os.ReadFile("/proc/sys/net/core/rmem_max")
	if err != nil {
		t.Fatal(err)
	}
	rmemMax, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	want := 2 * rmemMax
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	}()
	forceReadBuffer(c, want)
	raw, _ := c.SyscallConn()
	var got int
	if cerr := raw.Control(func(fd uintptr) { got, err = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) }); cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil || got < 2*want {
		t.Errorf("SO_RCVBUF %d (%v), want %d (rmem_max %d)", got, err, 2*want, rmemMax)
	}
}
