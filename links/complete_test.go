package links

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/testenv"
	"golang.org/x/sys/unix"
)

// TestEmulatedCompleteEnd is an emulated link whose b end is marked
// Complete, as a port of Open vSwitch's userspace datapath is: a packet
// socket on b0 without offload state (what ovs-vswitchd reads its ports
// with) must see every TCP frame of a bulk transfer from a whole, at most
// one MTU long and with a valid checksum, while a keeps TSO and sends the
// emulator super-frames. Without Complete the same socket sees frames whose
// checksum was left for a NIC (OVS forwards them so and the receiver drops
// them: mn's iperf over --link tc never finished) and super-frames of up to
// 64 KiB; the test checks that too, so it shows the cause.
func TestEmulatedCompleteEnd(t *testing.T) {
	for _, complete := range []bool{true, false} {
		t.Run(fmt.Sprintf("complete=%v", complete), func(t *testing.T) {
			testenv.Root(t)
			prefix := fmt.Sprintf("hymntest-cpl%d-%d", os.Getpid(), map[bool]int{false: 0, true: 1}[complete])
			a, b := testNamespace(t, prefix+"a"), testNamespace(t, prefix+"b")
			helper, err := CreateHelperNS(prefix + "e")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = helper.Delete() }) // the namespace checks at the end see leftovers
			saved := NoOffloads
			NoOffloads = false
			l, err := CreateEmulated(helper,
				End{NS: a, Name: "a0", IP: netip.MustParsePrefix("10.202.0.1/24")},
				End{NS: b, Name: "b0", IP: netip.MustParsePrefix("10.202.0.2/24"), Complete: complete},
				"e1", "e2", emulator.ForwarderConfig{AtoB: emulator.DefaultConfig(), BtoA: emulator.DefaultConfig()})
			NoOffloads = saved
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Stop() }) // the test judged what it needed before
			if !l.Offloads {
				t.Fatal("the link runs without offloads; the far end would not send super-frames")
			}
			frames := sniffTCP(t, b, "b0")
			sendBulk(t, a, b, "10.202.0.2:5201", 4<<20)
			st := <-frames
			t.Logf("at b0: %d TCP frames, %d with a bad checksum, %d longer than the MTU (largest %d B); emulator a>b: %+v",
				st.frames, st.badSum, st.oversize, st.largest, l.Fwd.Stats(emulator.AtoB).TxPort)
			if st.frames == 0 {
				t.Fatal("no TCP frame seen at b0")
			}
			// 4 MiB in segments of at most 1460 bytes.
			if complete && st.frames < (4<<20)/1460 {
				t.Errorf("a Complete end saw %d TCP frames, fewer than the %d segments 4 MiB take", st.frames, (4<<20)/1460)
			}
			if complete && (st.badSum > 0 || st.oversize > 0) {
				t.Errorf("a Complete end got %d frames with checksums left undone and %d longer than the MTU", st.badSum, st.oversize)
			}
			if !complete && st.badSum == 0 && st.oversize == 0 {
				t.Error("without Complete every frame was complete too: the test no longer shows what Complete is for")
			}
			if s := l.Fwd.Stats(emulator.AtoB); s.TxPort.TxFailed > 0 || s.TxPort.TxDropped > 0 {
				t.Errorf("the emulator's sends into the Complete end failed: %+v", s.TxPort)
			}
		})
	}
}

// tcpFrames sums up what sniffTCP saw.
type tcpFrames struct{ frames, badSum, oversize, largest int }

// sniffTCP reads every frame arriving at ifname (in ns) through a packet
// socket without PACKET_VNET_HDR, until 1 s passes without one, and checks
// the IPv4 TCP frames' length and checksum.
func sniffTCP(t *testing.T, ns *netnsx.Named, ifname string) <-chan tcpFrames {
	t.Helper()
	var fd int
	err := netnsx.Do(ns.NsHandle(), func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return err
		}
		if fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL))); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); err != nil {
			return err
		}
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20); err != nil {
			return err
		}
		return unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index})
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Close(fd) }) // read only
	tv := unix.NsecToTimeval(int64(time.Second))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	out := make(chan tcpFrames, 1)
	go func() {
		var st tcpFrames
		buf := make([]byte, 70000)
		for {
			n, _, err := unix.Recvfrom(fd, buf, 0)
			if err != nil {
				out <- st
				return
			}
			f := buf[:n]
			if n < 14+20+20 || binary.BigEndian.Uint16(f[12:]) != 0x0800 || f[14+9] != unix.IPPROTO_TCP {
				continue
			}
			st.frames++
			st.largest = max(st.largest, n)
			if n > 14+1500 {
				st.oversize++
			}
			if !tcpChecksumOK(f[14:]) {
				st.badSum++
			}
		}
	}()
	return out
}

// tcpChecksumOK checks an IPv4 packet's TCP checksum over the pseudo
// header.
func tcpChecksumOK(ip []byte) bool {
	ihl := int(ip[0]&0x0f) * 4
	total := int(binary.BigEndian.Uint16(ip[2:]))
	if total > len(ip) || ihl < 20 || total < ihl+20 {
		return false
	}
	seg := ip[ihl:total]
	var sum uint32
	add := func(b []byte) {
		for i := 0; i+1 < len(b); i += 2 {
			sum += uint32(binary.BigEndian.Uint16(b[i:]))
		}
		if len(b)%2 == 1 {
			sum += uint32(b[len(b)-1]) << 8
		}
	}
	add(ip[12:20])
	sum += unix.IPPROTO_TCP + uint32(len(seg))
	add(seg)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return sum == 0xffff
}

// sendBulk sends n bytes over TCP from a to a listener at addr in b.
func sendBulk(t *testing.T, a, b *netnsx.Named, addr string, n int) {
	t.Helper()
	ln, _ := listen(t, b, "tcp", addr)
	defer func() { _ = ln.Close() }() // accepted its one connection
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		defer func() { _ = c.Close() }() // read to the end
		if err := c.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
			got <- -1
			return
		}
		k, _ := io.Copy(io.Discard, c)
		got <- k
	}()
	c := dial(t, a, "tcp", addr)
	if err := c.SetWriteDeadline(time.Now().Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Errorf("sending: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("closing the sender: %v", err)
	}
	if k := <-got; k != int64(n) {
		t.Errorf("b received %d of %d bytes", k, n)
	}
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
