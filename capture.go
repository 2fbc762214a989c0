package hymn

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/hymn-net/hymn/capture"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/topo"
)

// CaptureSpec says what to capture on one link: the packets between Node1
// and Node2 in direction Dir (Forward, Reverse or BothDirections, seen from
// the order of the two names), into File (pcapng), at most Limit bytes of
// packet data per file. ParseCaptureSpec defaults Dir to BothDirections.
type CaptureSpec struct {
	Node1, Node2 string
	Dir          Direction
	File         string // default "<node1>-<node2>.pcapng"
	Limit        int64  // default capture.DefaultLimit; <0 no limit
}

// ParseCaptureSpec reads NODE1-NODE2[,dir=a>b|b>a|both][,file=F][,limit=BYTES]
// (NODE1:NODE2 also works, for node names with a '-'). BYTES may end in
// K, M or G.
func ParseCaptureSpec(s string) (CaptureSpec, error) {
	var c CaptureSpec
	parts := strings.Split(s, ",")
	link := parts[0]
	sep := ":"
	if !strings.Contains(link, ":") {
		sep = "-"
	}
	a, b, ok := strings.Cut(link, sep)
	if !ok || a == "" || b == "" || strings.Contains(b, sep) {
		return c, fmt.Errorf("link %q: name it NODE1-NODE2 (or NODE1:NODE2)", link)
	}
	c.Node1, c.Node2, c.Dir = a, b, BothDirections
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return c, fmt.Errorf("option %q: use key=value (dir, file, limit)", kv)
		}
		switch k {
		case "dir":
			d, err := ParseDirection(v)
			if err != nil {
				return c, err
			}
			c.Dir = d
		case "file":
			if v == "" {
				return c, errors.New("file: empty name")
			}
			c.File = v
		case "limit":
			n, err := parseBytes(v)
			if err != nil {
				return c, fmt.Errorf("limit %q: %w", v, err)
			}
			c.Limit = n
		default:
			return c, fmt.Errorf("unknown option %q (dir, file, limit)", k)
		}
	}
	return c, nil
}

func parseBytes(s string) (int64, error) {
	mult := int64(1)
	t := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(s, "B"), "b"))
	switch {
	case strings.HasSuffix(t, "K"):
		mult, t = 1<<10, strings.TrimSuffix(t, "K")
	case strings.HasSuffix(t, "M"):
		mult, t = 1<<20, strings.TrimSuffix(t, "M")
	case strings.HasSuffix(t, "G"):
		mult, t = 1<<30, strings.TrimSuffix(t, "G")
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v <= 0 || v > (1<<40)/mult {
		return 0, errors.New("not a byte count from 1 to 1T (K, M or G allowed)")
	}
	return v * mult, nil
}

// LinkCapture is a running capture of one link: one file, or two on an
// emulated link (before and after the emulator).
type LinkCapture struct {
	Spec  CaptureSpec
	Files []string
	caps  []*capture.Capture
}

// Stop ends the capture and closes its files; it returns what each
// interface of each file saw.
func (lc *LinkCapture) Stop() ([]capture.Stats, error) {
	var all []capture.Stats
	var errs []error
	for _, c := range lc.caps {
		st, err := c.Stop()
		all = append(all, st...)
		errs = append(errs, err)
	}
	return all, errors.Join(errs...)
}

// captures are a network's running captures, beside the Network (as
// emulated.go keeps its state) so network.go needs one call into this file.
var captures sync.Map // *Network -> *[]*LinkCapture, guarded by capturesMu
var capturesMu sync.Mutex

// StartCapture starts capturing a link into pcapng (nanosecond timestamps).
// On a plain veth or VF link it taps node1's end; on an emulated link it
// writes two files, FILE-before.pcapng with what the senders put on the
// link and FILE-after.pcapng with what the receivers got, so delays,
// reordering and drops are visible side by side.
func (n *Network) StartCapture(spec CaptureSpec) (*LinkCapture, error) {
	l, node1IsA, err := n.findLink(spec.Node1, spec.Node2)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	if spec.File == "" {
		spec.File = spec.Node1 + "-" + spec.Node2 + ".pcapng"
	}
	i1, i2 := l.plan.Intf1, l.plan.Intf2
	if !node1IsA {
		i1, i2 = i2, i1
	}
	fwd := spec.Dir != Reverse  // node1 → node2 wanted
	back := spec.Dir != Forward // node2 → node1 wanted
	// sent and recv build a tap keeping what a node sent or received on
	// its end of this link. A VM's end is the host side of its NIC, where
	// what the guest sends arrives.
	tapOf := func(i *topo.Intf, sent bool, what string) (capture.Tap, error) {
		end := n.linkEnd(l.plan, i)
		if end.NS == nil {
			return capture.Tap{}, fmt.Errorf("capture: node %s is not running", i.Node)
		}
		if n.guestOf(i) != nil {
			sent = !sent
		}
		dir := capture.Incoming
		if sent {
			dir = capture.Outgoing
		}
		ns := end.NS.NsHandle()
		return capture.Tap{
			In:        func(fn func() error) error { return netnsx.Do(ns, fn) },
			Interface: end.Name, Direction: dir,
			Name: i.Node + ":" + i.Name, Description: what,
		}, nil
	}
	type file struct {
		name string
		taps []func() (capture.Tap, error)
	}
	var files []file
	desc := func(from, to *topo.Intf, where string) string {
		return fmt.Sprintf("%s->%s %s", from.Node, to.Node, where)
	}
	if n.emulatedLink(l) == nil {
		var t func() (capture.Tap, error)
		switch {
		case fwd && back:
			t = func() (capture.Tap, error) {
				tp, err := tapOf(i1, true, "both directions")
				tp.Direction = capture.Both
				return tp, err
			}
		case fwd:
			t = func() (capture.Tap, error) { return tapOf(i1, true, desc(i1, i2, "")) }
		default:
			t = func() (capture.Tap, error) { return tapOf(i1, false, desc(i2, i1, "")) }
		}
		files = append(files, file{spec.File, []func() (capture.Tap, error){t}})
	} else {
		base := strings.TrimSuffix(spec.File, ".pcapng")
		before := file{name: base + "-before.pcapng"}
		after := file{name: base + "-after.pcapng"}
		if fwd {
			before.taps = append(before.taps, func() (capture.Tap, error) { return tapOf(i1, true, desc(i1, i2, "before the emulator")) })
			after.taps = append(after.taps, func() (capture.Tap, error) { return tapOf(i2, false, desc(i1, i2, "after the emulator")) })
		}
		if back {
			before.taps = append(before.taps, func() (capture.Tap, error) { return tapOf(i2, true, desc(i2, i1, "before the emulator")) })
			after.taps = append(after.taps, func() (capture.Tap, error) { return tapOf(i1, false, desc(i2, i1, "after the emulator")) })
		}
		files = append(files, before, after)
	}
	lc := &LinkCapture{Spec: spec}
	for _, f := range files {
		cfg := capture.Config{File: f.name, Limit: spec.Limit}
		for _, mk := range f.taps {
			t, err := mk()
			if err != nil {
				_, serr := lc.Stop()
				return nil, errors.Join(err, serr)
			}
			cfg.Taps = append(cfg.Taps, t)
		}
		c, err := capture.Start(cfg)
		if err != nil {
			_, serr := lc.Stop()
			return nil, errors.Join(err, serr)
		}
		lc.caps = append(lc.caps, c)
		lc.Files = append(lc.Files, f.name)
	}
	capturesMu.Lock()
	v, _ := captures.LoadOrStore(n, &[]*LinkCapture{})
	list := v.(*[]*LinkCapture)
	*list = append(*list, lc)
	capturesMu.Unlock()
	return lc, nil
}

// Captures lists the network's running captures.
func (n *Network) Captures() []*LinkCapture {
	capturesMu.Lock()
	defer capturesMu.Unlock()
	v, ok := captures.Load(n)
	if !ok {
		return nil
	}
	return append([]*LinkCapture(nil), *v.(*[]*LinkCapture)...)
}

// StopCaptures stops every capture of the network (Stop does it too).
func (n *Network) StopCaptures() error {
	capturesMu.Lock()
	v, ok := captures.LoadAndDelete(n)
	capturesMu.Unlock()
	if !ok {
		return nil
	}
	var errs []error
	for _, lc := range *v.(*[]*LinkCapture) {
		_, err := lc.Stop()
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// stopCaptures is the hook teardown calls while the interfaces still exist.
func (n *Network) stopCaptures() error { return n.StopCaptures() }

// ForgetStoppedCaptures drops captures that were stopped one by one from
// Captures' list.
func (n *Network) ForgetStoppedCaptures() {
	capturesMu.Lock()
	defer capturesMu.Unlock()
	v, ok := captures.Load(n)
	if !ok {
		return
	}
	list := v.(*[]*LinkCapture)
	kept := (*list)[:0]
	for _, lc := range *list {
		if !lc.stopped() {
			kept = append(kept, lc)
		}
	}
	*list = kept
}

func (lc *LinkCapture) stopped() bool {
	for _, c := range lc.caps {
		if !c.Stopped() {
			return false
		}
	}
	return true
}
