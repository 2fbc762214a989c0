package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/links"
	"github.com/vishvananda/netlink"
)

// DefaultExecTimeout bounds an exec command without a timeout.
const DefaultExecTimeout = 60 * time.Second

// MaxExecTimeout bounds any exec command.
const MaxExecTimeout = 10 * time.Minute

// WorkerOptions configure RunWorker.
type WorkerOptions struct {
	Spec *Spec
	// Underlay is the namespace the tunnels are anchored in; nil: the
	// process's own (a pod's, or a local "machine" namespace).
	Underlay links.Namespace
	// Address is this worker's address, which its peers send to; invalid:
	// the first global IPv4 address of the underlay.
	Address netip.Addr
	// Net are the network options of the part (switch kind, node
	// backend...), as for a single machine.
	Net hymn.Options
	// BuildTimeout bounds building the part (0: 5 minutes).
	BuildTimeout time.Duration
	// View makes the live view's API for the part's network (ui.Handler;
	// this package does not import the view), which the coordinator's
	// view reaches with "api" commands; nil: the worker answers none.
	View func(*hymn.Network) (h http.Handler, closeIt func(), err error)
}

// RunWorker runs one worker: builds its part, reports "ready", then serves
// commands from in until "stop", the end of in, or ctx ends (SIGTERM),
// and tears everything down ("stopped"). A failure is reported as a fatal
// "error" event before the teardown and returned. Nothing is left behind
// in any case.
func RunWorker(ctx context.Context, opts WorkerOptions, in io.Reader, out io.Writer) (err error) {
	// Events to the coordinator are not checked: a failed write means it
	// is gone, which the end of in (EOF) reports and answers by a teardown.
	w := &lineWriter{w: out}
	r, err := opts.Spec.Resolve()
	if err != nil {
		return err
	}
	me := opts.Spec.Worker
	fatal := func(err error) error {
		_ = w.write(Event{Event: "error", Worker: me, Error: err.Error(), Fatal: true})
		return err
	}
	if err := PrepareContainer(); err != nil { // an unprivileged pod's read-only /proc/sys
		return fatal(err)
	}
	underlay := opts.Underlay
	if underlay == nil {
		if underlay, err = links.HostNamespace(); err != nil {
			return fatal(err)
		}
	}
	addr := opts.Address
	if !addr.IsValid() {
		if addr, err = guessAddress(underlay); err != nil {
			return fatal(err)
		}
	}
	timeout := opts.BuildTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	t0 := time.Now()
	bctx, cancel := context.WithTimeout(ctx, timeout)
	part, err := StartPart(bctx, r, underlay, opts.Net)
	cancel()
	if err != nil {
		return fatal(err)
	}
	t1 := time.Now()
	defer func() {
		t := time.Now()
		if serr := part.Stop(); serr != nil {
			err = errors.Join(err, fatal(fmt.Errorf("teardown: %w", serr)))
		}
		_ = w.write(Event{Event: "stopped", Worker: me, Millis: time.Since(t).Milliseconds()})
	}()
	var view http.Handler
	if opts.View != nil {
		h, closeView, err := opts.View(part.Net)
		if err != nil {
			return fatal(fmt.Errorf("live view: %w", err))
		}
		defer closeView() // before the part stops (deferred earlier)
		view = h
	}
	var names []string
	for _, pn := range r.LocalNodes() {
		names = append(names, pn.Name)
	}
	ready := Event{Event: "ready", Worker: me, Address: addr.String(), Run: part.Net.RunID(), Nodes: names,
		Links: len(part.Net.Plan().Links), Millis: t1.Sub(t0).Milliseconds()}
	_ = w.write(ready)

	cmds := make(chan Command)
	readErr := make(chan error, 1)
	go func() {
		lr := newLineReader(in)
		for {
			var c Command
			err, fatal := lr.next(&c)
			if err != nil && fatal {
				readErr <- err
				return
			}
			if err != nil {
				_ = w.write(Event{Event: "error", Worker: me, Error: err.Error()})
				continue
			}
			select {
			case cmds <- c:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			if errors.Is(err, io.EOF) {
				return nil // the coordinator went away: tear down
			}
			return fatal(fmt.Errorf("reading commands: %w", err))
		case c := <-cmds:
			switch c.Cmd {
			case "stop":
				return nil
			case "ready":
				// Said again for a coordinator that attached late (a
				// pod's attach stream starts with no earlier output).
				_ = w.write(ready)
				continue
			}
			if c.Cmd == "api" {
				serveAPI(ctx, view, me, c, w)
				continue
			}
			if err := serve(ctx, part, me, c, w); err != nil {
				return fatal(err)
			}
		}
	}
}

// serve runs one command. Only a failure that leaves the part unusable
// (its cut links could not be made) is returned; mistakes in a command are
// reported as non-fatal errors.
func serve(ctx context.Context, part *Part, me int, c Command, w *lineWriter) error {
	reply := func(e Event) { e.ID, e.Worker = c.ID, me; _ = w.write(e) }
	bad := func(format string, a ...any) { reply(Event{Event: "error", Error: fmt.Sprintf(format, a...)}) }
	switch c.Cmd {
	case "link":
		peers := make([]netip.Addr, len(c.Peers))
		for i, s := range c.Peers {
			a, err := netip.ParseAddr(s)
			if err != nil {
				bad("link: peer %d: %q is not an IP address", i, s)
				return nil
			}
			peers[i] = a
		}
		t := time.Now()
		if err := part.Link(ctx, peers); err != nil {
			return fmt.Errorf("link: %w", err)
		}
		st, err := part.Stats()
		if err != nil {
			return err
		}
		reply(Event{Event: "linked", Cut: st, Millis: time.Since(t).Milliseconds()})
	case "relink":
		if c.Peer == nil {
			bad("relink: no peer (the worker that was replaced)")
			return nil
		}
		a, err := netip.ParseAddr(c.Address)
		if err != nil {
			bad("relink: worker %d: %q is not an IP address", *c.Peer, clip(c.Address, 60))
			return nil
		}
		t := time.Now()
		st, err := part.Relink(ctx, *c.Peer, a)
		if err != nil {
			// The part runs on; the coordinator decides what a missing
			// cut link means.
			bad("relink: %v", err)
			return nil
		}
		reply(Event{Event: "relinked", Cut: st, Millis: time.Since(t).Milliseconds()})
	case "stats":
		st, err := part.Stats()
		if err != nil {
			bad("stats: %v", err)
			return nil
		}
		reply(Event{Event: "stats", Cut: st})
	case "exec":
		if len(c.Argv) == 0 {
			bad("exec: no program")
			return nil
		}
		node, err := part.Net.Node(c.Node)
		if err != nil {
			bad("exec: node %q is not on worker %d", c.Node, me)
			return nil
		}
		d := DefaultExecTimeout
		if c.Timeout < 0 || c.Timeout > MaxExecTimeout.Seconds() {
			bad("exec: timeout %v s is outside 0-%v", c.Timeout, MaxExecTimeout.Seconds())
			return nil
		} else if c.Timeout > 0 {
			d = time.Duration(c.Timeout * float64(time.Second))
		}
		ectx, cancel := context.WithTimeout(ctx, d)
		res, err := node.Exec(ectx, c.Argv[0], c.Argv[1:]...)
		cancel()
		if err != nil {
			bad("exec on %s: %v", c.Node, err)
			return nil
		}
		code := res.ExitCode
		reply(Event{Event: "exec", Exit: &code, Stdout: clipBytes(res.Stdout, MaxOutput), Stderr: clipBytes(res.Stderr, MaxOutput)})
	case "rtt":
		dst, err := netip.ParseAddr(c.Dst)
		if err != nil {
			bad("rtt: %q is not an IP address", clip(c.Dst, 60))
			return nil
		}
		if math.IsNaN(c.GapMs) || c.GapMs < 1 || c.GapMs > 1000 {
			bad("rtt: gap %v ms is outside 1-1000", c.GapMs)
			return nil
		}
		rtts, err := part.Net.RTTSeries(ctx, c.Node, dst, c.Count, time.Duration(c.GapMs*float64(time.Millisecond)))
		if err != nil {
			bad("rtt on %s: %v", c.Node, err)
			return nil
		}
		us := make([]float64, len(rtts))
		for i, r := range rtts {
			us[i] = float64(r) / 1e3
		}
		reply(Event{Event: "rtt", RTTMicros: us})
	default:
		bad("unknown command %q (use link, relink, stats, exec, rtt, api, ready, stop)", clip(c.Cmd, 40))
	}
	return nil
}

// serveAPI answers an "api" command: one request of the live view's API
// for this worker's part, run in this process. Event streams are refused:
// the coordinator samples with /api/stats.
func serveAPI(ctx context.Context, view http.Handler, me int, c Command, w *lineWriter) {
	reply := func(e Event) { e.ID, e.Worker = c.ID, me; _ = w.write(e) }
	bad := func(format string, a ...any) { reply(Event{Event: "error", Error: fmt.Sprintf(format, a...)}) }
	switch {
	case view == nil:
		bad("api: this worker serves no live view")
		return
	case c.Method != http.MethodGet && c.Method != http.MethodPost:
		bad("api: method %q: GET or POST", clip(c.Method, 20))
		return
	case !strings.HasPrefix(c.Target, "/api/") || strings.HasPrefix(c.Target, "/api/events"):
		bad("api: target %q: a request under /api/ other than the event stream", clip(c.Target, 80))
		return
	}
	req, err := http.NewRequestWithContext(ctx, c.Method, c.Target, bytes.NewReader(c.Body))
	if err != nil {
		bad("api: %v", err)
		return
	}
	if c.Method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	view.ServeHTTP(rec, req)
	if rec.Body.Len() > MaxAPIBody {
		bad("api: %s: the answer has %d bytes, more than a protocol line carries (%d)", clip(c.Target, 80), rec.Body.Len(), MaxAPIBody)
		return
	}
	h := map[string]string{}
	for _, k := range []string{"Content-Type", "Content-Disposition"} {
		if v := rec.Header().Get(k); v != "" {
			h[k] = v
		}
	}
	reply(Event{Event: "api", Status: rec.Code, Header: h, Body: rec.Body.Bytes()})
}

// guessAddress returns the first global unicast IPv4 address of an up,
// non-loopback interface of the namespace: a pod's eth0.
func guessAddress(ns links.Namespace) (netip.Addr, error) {
	var found netip.Addr
	err := ns.Netlink(func(h *netlink.Handle) error {
		ls, err := h.LinkList()
		if err != nil {
			return err
		}
		for _, l := range ls {
			if l.Attrs().Flags&net.FlagUp == 0 || l.Attrs().Flags&net.FlagLoopback != 0 {
				continue
			}
			addrs, err := h.AddrList(l, netlink.FAMILY_V4)
			if err != nil {
				return err
			}
			for _, a := range addrs {
				if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok && ip.IsGlobalUnicast() {
					found = ip
					return nil
				}
			}
		}
		return nil
	})
	if err != nil {
		return netip.Addr{}, err
	}
	if !found.IsValid() {
		return netip.Addr{}, errors.New("this worker has no IPv4 address to receive tunnels on; give it one with --address")
	}
	return found, nil
}
