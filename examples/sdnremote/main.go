// Command sdnremote is a tiny OpenFlow 1.0 controller, the kind of "remote
// controller" Mininet users run beside their network (Ryu, POX, ONOS): it
// floods every packet the switches send it, except packets between two
// blocked hosts, which it drops. It installs no flows, so every packet is
// its decision.
//
//	go run ./examples/sdnremote -listen 127.0.0.1:6653 -block 10.0.0.1,10.0.0.2 &
//	hymn --switch ovsk --controller remote,ip=127.0.0.1,port=6653 --topo single,3 --test pingall
//
// pingall then reports h1 and h2 unreachable from each other and 33%
// dropped (4/6 received).
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
)

// OpenFlow 1.0 message types and constants this controller uses.
const (
	ofVersion       = 0x01
	ofptHello       = 0
	ofptEchoRequest = 2
	ofptEchoReply   = 3
	ofptFeaturesReq = 5
	ofptSetConfig   = 9
	ofptPacketIn    = 10
	ofptPacketOut   = 13
	ofppFlood       = 0xfffb
	ofpNoBuffer     = 0xffffffff
	maxMessage      = 1 << 16 // an OpenFlow length is 16 bits
)

// Controller floods packets, dropping those between the Blocked pair.
type Controller struct {
	Blocked [2]netip.Addr

	Connections atomic.Int64 // switches that completed the handshake
	Flooded     atomic.Int64
	Dropped     atomic.Int64

	wg sync.WaitGroup
}

// Serve accepts switches until the listener is closed.
func (c *Controller) Serve(ln net.Listener) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			c.wg.Wait()
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			// handle's error (logged) says what went wrong; the switch
			// has gone or is being dropped either way.
			defer func() { _ = conn.Close() }()
			if err := c.handle(conn); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				log.Printf("switch %s: %v", conn.RemoteAddr(), err)
			}
		}()
	}
}

func message(typ uint8, xid uint32, body []byte) []byte {
	m := make([]byte, 8+len(body))
	m[0], m[1] = ofVersion, typ
	binary.BigEndian.PutUint16(m[2:], uint16(len(m)))
	binary.BigEndian.PutUint32(m[4:], xid)
	copy(m[8:], body)
	return m
}

// handle speaks to one switch: hello (which settles on OpenFlow 1.0),
// features request, full packets to the controller, then packet-ins.
func (c *Controller) handle(conn net.Conn) error {
	w := func(m []byte) error { _, err := conn.Write(m); return err }
	if err := w(message(ofptHello, 1, nil)); err != nil {
		return err
	}
	hdr := make([]byte, 8)
	helloSeen := false
	for {
		if _, err := io.ReadFull(conn, hdr); err != nil {
			return err
		}
		length := int(binary.BigEndian.Uint16(hdr[2:]))
		if length < 8 || length > maxMessage {
			return fmt.Errorf("bad message length %d", length)
		}
		body := make([]byte, length-8)
		if _, err := io.ReadFull(conn, body); err != nil {
			return err
		}
		xid := binary.BigEndian.Uint32(hdr[4:])
		switch hdr[1] {
		case ofptHello:
			if helloSeen {
				continue
			}
			helloSeen = true
			config := []byte{0, 0, 0xff, 0xff} // flags, miss_send_len: whole packets
			if err := w(append(message(ofptFeaturesReq, 2, nil), message(ofptSetConfig, 3, config)...)); err != nil {
				return err
			}
			c.Connections.Add(1)
			defer c.Connections.Add(-1)
		case ofptEchoRequest:
			if err := w(message(ofptEchoReply, xid, body)); err != nil {
				return err
			}
		case ofptPacketIn:
			if hdr[0] != ofVersion || len(body) < 10 {
				continue
			}
			if err := c.packetIn(w, xid, body); err != nil {
				return err
			}
		}
	}
}

// packetIn floods the packet unless it goes between the blocked hosts: a
// dropped packet gets a packet-out without actions (which only frees the
// switch's buffer, if it kept one).
func (c *Controller) packetIn(w func([]byte) error, xid uint32, body []byte) error {
	bufferID := binary.BigEndian.Uint32(body[0:])
	inPort := binary.BigEndian.Uint16(body[6:])
	frame := body[10:]
	var actions []byte
	if src, dst, ok := addresses(frame); ok && c.blocked(src, dst) {
		c.Dropped.Add(1)
		if bufferID == ofpNoBuffer {
			return nil
		}
	} else {
		c.Flooded.Add(1)
		actions = []byte{0, 0, 0, 8, 0, 0, 0, 0} // OFPAT_OUTPUT, len 8, port, max_len
		binary.BigEndian.PutUint16(actions[4:], ofppFlood)
	}
	out := make([]byte, 8, 8+len(actions)+len(frame))
	binary.BigEndian.PutUint32(out[0:], bufferID)
	binary.BigEndian.PutUint16(out[4:], inPort)
	binary.BigEndian.PutUint16(out[6:], uint16(len(actions)))
	out = append(out, actions...)
	if bufferID == ofpNoBuffer {
		out = append(out, frame...)
	}
	return w(message(ofptPacketOut, xid, out))
}

func (c *Controller) blocked(src, dst netip.Addr) bool {
	a, b := c.Blocked[0], c.Blocked[1]
	return a.IsValid() && (src == a && dst == b || src == b && dst == a)
}

// addresses returns the IPv4 source and destination of an ARP or IPv4
// frame.
func addresses(frame []byte) (src, dst netip.Addr, ok bool) {
	if len(frame) < 14 {
		return src, dst, false
	}
	payload := frame[14:]
	switch binary.BigEndian.Uint16(frame[12:]) {
	case 0x0806: // ARP: sender and target protocol addresses
		if len(payload) < 28 {
			return src, dst, false
		}
		return netip.AddrFrom4([4]byte(payload[14:18])), netip.AddrFrom4([4]byte(payload[24:28])), true
	case 0x0800:
		if len(payload) < 20 {
			return src, dst, false
		}
		return netip.AddrFrom4([4]byte(payload[12:16])), netip.AddrFrom4([4]byte(payload[16:20])), true
	}
	return src, dst, false
}

// parseBlock reads "IP,IP".
func parseBlock(s string) ([2]netip.Addr, error) {
	var pair [2]netip.Addr
	if s == "" {
		return pair, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 2 {
		return pair, fmt.Errorf("-block %q: want two IPv4 addresses, IP,IP", s)
	}
	for i, p := range parts {
		a, err := netip.ParseAddr(strings.TrimSpace(p))
		if err != nil || !a.Is4() {
			return pair, fmt.Errorf("-block %q: %q is not an IPv4 address", s, p)
		}
		pair[i] = a
	}
	return pair, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:6653", "address to listen on for switches")
	block := flag.String("block", "10.0.0.1,10.0.0.2", "two hosts (IP,IP) whose traffic is dropped; empty floods everything")
	flag.Parse()
	pair, err := parseBlock(*block)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdnremote:", err)
		os.Exit(2)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdnremote:", err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() { <-ctx.Done(); _ = ln.Close() }() // ends Serve, which then returns nil
	c := &Controller{Blocked: pair}
	log.Printf("listening on %s, dropping %s <-> %s", ln.Addr(), pair[0], pair[1])
	if err := c.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "sdnremote:", err)
		os.Exit(1)
	}
	log.Printf("flooded %d packets, dropped %d", c.Flooded.Load(), c.Dropped.Load())
}
