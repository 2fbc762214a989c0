package nodes

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeAddrKeepsThePort: a controller whose 127.0.0.1 port is taken
// (another network's) moves to the same port on the next loopback address,
// where Mininet's tools still find OpenFlow (tshark decodes it by port);
// only when the port is taken on every address (a listener on 0.0.0.0)
// does it move to another port.
func TestFreeAddrKeepsThePort(t *testing.T) {
	// A free port of the machine's choosing stands in for 6653, which
	// other networks on the machine may hold.
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := probe.Addr().(*net.TCPAddr).Port
	_ = probe.Close() // only asked for a free port

	ip, p, err := freeAddr("127.0.0.1", port)
	if err != nil || ip != "127.0.0.1" || p != port {
		t.Errorf("free port: %s:%d, %v; want 127.0.0.1:%d", ip, p, err, port)
	}
	held, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	ip, p, err = freeAddr("127.0.0.1", port)
	if err != nil || ip != "127.0.0.2" || p != port {
		t.Errorf("127.0.0.1:%d taken: %s:%d, %v; want 127.0.0.2:%d", port, ip, p, err, port)
	}
	_ = held.Close() // only held

	wild, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("cannot hold port %d on every address: %v", port, err)
	}
	defer func() { _ = wild.Close() }() // only held
	ip, p, err = freeAddr("127.0.0.1", port)
	if err != nil || ip != "127.0.0.1" || p == port {
		t.Errorf("port %d taken on every address: %s:%d, %v; want 127.0.0.1 and another port", port, ip, p, err)
	}
	// A controller given another address keeps it and looks for a port.
	ip, p, err = freeAddr("127.0.0.3", port)
	if err != nil || ip != "127.0.0.3" || p == port {
		t.Errorf("127.0.0.3 with port %d taken everywhere: %s:%d, %v", port, ip, p, err)
	}
}
