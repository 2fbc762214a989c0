package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn/partition"
)

// Transport starts workers somewhere and carries the protocol to them. The
// coordinator knows nothing else about where workers run: Local runs them
// as processes in namespaces of this machine; Kubectl creates a
// privileged pod per worker with kubectl (the spec in a ConfigMap, the
// protocol over kubectl attach) and deletes them on Close.
type Transport interface {
	// Launch starts worker spec.Worker with its spec and returns the
	// connection to it. The worker reports "ready" on it once built.
	Launch(ctx context.Context, spec *Spec) (Conn, error)
	// Close removes everything the transport made (machines, pods,
	// files), after the workers have stopped or been killed.
	Close() error
}

// Conn is the coordinator's line to one worker.
type Conn interface {
	Send(Command) error
	// Events delivers the worker's events; it is closed when the worker
	// has exited.
	Events() <-chan Event
	// Stop asks the worker to tear down and waits for it to exit, killing
	// it when ctx ends first.
	Stop(ctx context.Context) error
}

// Options configure a cluster run.
type Options struct {
	Partition partition.Options // Parts is the worker count
	Port      int               // VXLAN port (0: 4789)
	VNIBase   int
	// ReadyTimeout bounds the wait for every worker to be built and
	// linked (0: 5 minutes).
	ReadyTimeout time.Duration
	// Log receives progress lines; nil drops them.
	Log func(format string, a ...any)
	// Source names who gave the topology when it is not the local user
	// ("a Topology resource"); its parameters then name no host file
	// (Spec.Source).
	Source string
}

// Cluster is a topology running on workers.
type Cluster struct {
	Split  *partition.Result
	Specs  []*Spec
	Ready  []Event // each worker's ready event
	Linked []Event // each worker's linked event
	// Timings, for reports: launching and building the parts, then
	// linking them.
	BuildTime, LinkTime time.Duration

	tr    Transport
	conns []Conn
	mu    []sync.Mutex // one exchange per worker at a time
	ids   int
	idMu  sync.Mutex
	// connsMu guards conns (Replace swaps one); life serialises Replace
	// and Stop, so nothing is launched once the transport is closed.
	connsMu      sync.Mutex
	life         sync.Mutex
	stopped      bool
	readyTimeout time.Duration
	logf         func(format string, a ...any)
}

// Start splits the topology, launches every worker, waits until all are
// built, hands them each other's addresses and waits until every cut link
// is up. On any failure every worker is stopped and the transport closed:
// nothing is left.
func Start(ctx context.Context, tr Transport, topology, file, ipbase string, autoMAC bool, opts Options) (_ *Cluster, err error) {
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	n := opts.Partition.Parts
	specs, res, err := NewSpecFrom(opts.Source, topology, file, ipbase, autoMAC, n, opts.Partition)
	if err != nil {
		// The transport's close is best effort beside the error returned
		// (here and below).
		_ = tr.Close()
		return nil, err
	}
	for _, s := range specs {
		s.Port, s.VNIBase = opts.Port, opts.VNIBase
		if _, err := s.Resolve(); err != nil {
			_ = tr.Close()
			return nil, err
		}
	}
	logf("*** Split over %d workers: %v nodes, %d cut links\n", n, res.Sizes(), res.CutSize())
	c := &Cluster{Split: res, Specs: specs, tr: tr, conns: make([]Conn, n), mu: make([]sync.Mutex, n),
		Ready: make([]Event, n), Linked: make([]Event, n), logf: logf}
	defer func() {
		if err != nil {
			sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_ = c.Stop(sctx) // best-effort teardown: the start error is the news
			cancel()
		}
	}()
	timeout := opts.ReadyTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	c.readyTimeout = timeout
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	for i, s := range specs {
		if c.conns[i], err = tr.Launch(rctx, s); err != nil {
			return nil, fmt.Errorf("launching worker %d: %w", i, err)
		}
	}
	// Wait for every worker concurrently: they build in parallel.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Ready[i], errs[i] = c.await(rctx, i, "ready", 0)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.BuildTime = time.Since(t0)
	peers := make([]string, n)
	for i, e := range c.Ready {
		a, err := netip.ParseAddr(e.Address)
		if err != nil {
			return nil, fmt.Errorf("worker %d reported address %q: %v", i, e.Address, err)
		}
		peers[i] = a.String()
		logf("*** worker %d ready at %s in %d ms: %s\n", i, a, e.Millis, strings.Join(e.Nodes, " "))
	}
	t1 := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.mu[i].Lock()
			defer c.mu[i].Unlock()
			id := c.nextID()
			if errs[i] = c.conns[i].Send(Command{Cmd: "link", ID: id, Peers: peers}); errs[i] == nil {
				c.Linked[i], errs[i] = c.await(rctx, i, "linked", id)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.LinkTime = time.Since(t1)
	logf("*** %d cut links up in %v\n", res.CutSize(), c.LinkTime.Round(time.Millisecond))
	return c, nil
}

func (c *Cluster) conn(i int) Conn {
	c.connsMu.Lock()
	defer c.connsMu.Unlock()
	return c.conns[i]
}

// Replace runs worker i again in place of one that died or must go (its
// pod was deleted, its machine killed): the old worker's connection is
// stopped and forgotten, worker i is launched again through the transport
// with the same spec, and once it reports "ready" it is told every
// worker's address ("link") while every other worker re-creates its side
// of the cut links shared with worker i toward the new address
// ("relink"). It returns when every cut link is up again, or with an
// error naming the worker that failed; a new worker that does not come up
// or cannot link is stopped again. Its build and link are bounded by the
// Options' ReadyTimeout as well as ctx.
//
// A part's network is torn down by its worker: one that was killed (-9,
// a deleted pod's container) may leave its namespaces on the machine,
// which hymn clean (or the pod's end) removes.
func (c *Cluster) Replace(ctx context.Context, i int) (err error) {
	if i < 0 || i >= len(c.Specs) {
		return fmt.Errorf("replace: no worker %d (the cluster has workers 0-%d)", i, len(c.Specs)-1)
	}
	c.life.Lock()
	defer c.life.Unlock()
	if c.stopped {
		return fmt.Errorf("replace worker %d: the cluster is stopped", i)
	}
	rctx, cancel := context.WithTimeout(ctx, c.readyTimeout)
	defer cancel()
	// Exchanges with worker i wait (and then see the new worker); the
	// others go on until their relink.
	c.mu[i].Lock()
	defer c.mu[i].Unlock()
	t0 := time.Now()
	if old := c.conn(i); old != nil {
		// A dead worker's connection ends at once; a live one is asked
		// to tear down first. Its exit status is no news: it is being
		// replaced.
		sctx, scancel := context.WithTimeout(rctx, 30*time.Second)
		_ = old.Stop(sctx)
		scancel()
	}
	conn, err := c.tr.Launch(rctx, c.Specs[i])
	c.connsMu.Lock()
	if err != nil {
		c.conns[i] = goneConn(i) // the old one is forgotten either way
	} else {
		c.conns[i] = conn
	}
	c.connsMu.Unlock()
	if err != nil {
		return fmt.Errorf("replace: launching worker %d again: %w", i, err)
	}
	defer func() {
		if err != nil && conn != nil {
			sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
			_ = conn.Stop(sctx) // best effort: the relink error is returned
			scancel()
		}
	}()
	ready, err := c.await(rctx, i, "ready", 0)
	if err != nil {
		return fmt.Errorf("replace: %w", err)
	}
	a, err := netip.ParseAddr(ready.Address)
	if err != nil {
		return fmt.Errorf("replace: worker %d reported address %q: %v", i, ready.Address, err)
	}
	c.logf("*** worker %d ready again at %s in %d ms: %s\n", i, a, ready.Millis, strings.Join(ready.Nodes, " "))
	peers := make([]string, len(c.Specs))
	for j, e := range c.Ready {
		peers[j] = e.Address
	}
	peers[i] = a.String()
	// The new worker links while the others relink: the tunnels of a
	// cut link carry traffic once both sides exist.
	t1 := time.Now()
	errs := make([]error, len(c.Specs))
	var linked Event
	var wg sync.WaitGroup
	for j := range c.Specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := Command{Cmd: "link", Peers: peers}
			kind := "linked"
			if j != i {
				if !c.shares(i, j) {
					return
				}
				c.mu[j].Lock()
				defer c.mu[j].Unlock()
				cmd = Command{Cmd: "relink", Peer: &i, Address: peers[i]}
				kind = "relinked"
			}
			cmd.ID = c.nextID()
			var e Event
			if errs[j] = c.conn(j).Send(cmd); errs[j] == nil {
				e, errs[j] = c.await(rctx, j, kind, cmd.ID)
			}
			if errs[j] != nil {
				errs[j] = fmt.Errorf("replace worker %d: %s: %w", i, cmd.Cmd, errs[j])
			} else if j == i {
				linked = e
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	c.Ready[i], c.Linked[i] = ready, linked
	c.logf("*** worker %d replaced: built in %v, its cut links up again in %v\n", i,
		t1.Sub(t0).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
	return nil
}

// shares says whether worker j has a cut link to worker i (when unsure,
// yes: a relink without such links changes nothing).
func (c *Cluster) shares(i, j int) bool {
	r, err := c.Specs[j].Resolve()
	if err != nil {
		return true
	}
	for _, cut := range r.Cut {
		if cut.Peer == i {
			return true
		}
	}
	return false
}

func (c *Cluster) nextID() int {
	c.idMu.Lock()
	defer c.idMu.Unlock()
	c.ids++
	return c.ids
}

// await waits for worker i's event of that kind (and id, when not 0). An
// error event for it, or any fatal one, or the worker's exit, is an error.
func (c *Cluster) await(ctx context.Context, i int, kind string, id int) (Event, error) {
	for {
		select {
		case <-ctx.Done():
			return Event{}, fmt.Errorf("worker %d: no %s event: %w", i, kind, ctx.Err())
		case e, ok := <-c.conn(i).Events():
			if !ok {
				return Event{}, fmt.Errorf("worker %d exited before its %s event", i, kind)
			}
			switch {
			case e.Event == "error" && (e.Fatal || e.ID == id):
				return e, fmt.Errorf("worker %d: %s", i, e.Error)
			case e.Event == kind && e.ID == id:
				return e, nil
			}
		}
	}
}

// Worker returns the worker running a node, or an error naming it.
func (c *Cluster) Worker(node string) (int, error) {
	w, ok := c.Split.Assign[node]
	if !ok {
		return 0, fmt.Errorf("no node %q in the topology", node)
	}
	return w, nil
}

// Exec runs a program in a node on whichever worker holds it.
func (c *Cluster) Exec(ctx context.Context, node string, timeout time.Duration, argv ...string) (Event, error) {
	w, err := c.Worker(node)
	if err != nil {
		return Event{}, err
	}
	c.mu[w].Lock()
	defer c.mu[w].Unlock()
	id := c.nextID()
	if err := c.conn(w).Send(Command{Cmd: "exec", ID: id, Node: node, Argv: argv, Timeout: timeout.Seconds()}); err != nil {
		return Event{}, fmt.Errorf("worker %d: %w", w, err)
	}
	return c.await(ctx, w, "exec", id)
}

// RTT measures count round trips from node to dst, gap apart, on node's
// worker (to the ns: see hymn.Network.RTTSeries), in µs.
func (c *Cluster) RTT(ctx context.Context, node string, dst netip.Addr, count int, gap time.Duration) ([]float64, error) {
	w, err := c.Worker(node)
	if err != nil {
		return nil, err
	}
	c.mu[w].Lock()
	defer c.mu[w].Unlock()
	id := c.nextID()
	cmd := Command{Cmd: "rtt", ID: id, Node: node, Dst: dst.String(), Count: count, GapMs: float64(gap) / float64(time.Millisecond)}
	if err := c.conn(w).Send(cmd); err != nil {
		return nil, fmt.Errorf("worker %d: %w", w, err)
	}
	e, err := c.await(ctx, w, "rtt", id)
	return e.RTTMicros, err
}

// API runs one request of the live view's API in worker w's process (see
// WorkerOptions.View): GET or POST, a target under /api/, a JSON body for
// POST. Waiting for the worker's line (another exchange with it runs) is
// bounded by ctx too.
func (c *Cluster) API(ctx context.Context, w int, method, target string, body []byte) (Event, error) {
	if w < 0 || w >= len(c.Specs) {
		return Event{}, fmt.Errorf("no worker %d", w)
	}
	if err := lockCtx(ctx, &c.mu[w]); err != nil {
		return Event{}, fmt.Errorf("worker %d: %w", w, err)
	}
	defer c.mu[w].Unlock()
	id := c.nextID()
	if err := c.conn(w).Send(Command{Cmd: "api", ID: id, Method: method, Target: target, Body: body}); err != nil {
		return Event{}, fmt.Errorf("worker %d: %w", w, err)
	}
	return c.await(ctx, w, "api", id)
}

// lockCtx locks mu unless ctx ends first.
func lockCtx(ctx context.Context, mu *sync.Mutex) error {
	for !mu.TryLock() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	return nil
}

// Stats asks every worker for its cut links' counters.
func (c *Cluster) Stats(ctx context.Context) ([]Event, error) {
	out := make([]Event, len(c.conns))
	for i := range c.conns {
		if err := lockCtx(ctx, &c.mu[i]); err != nil {
			return nil, fmt.Errorf("worker %d: %w", i, err)
		}
		id := c.nextID()
		err := c.conn(i).Send(Command{Cmd: "stats", ID: id})
		if err == nil {
			out[i], err = c.await(ctx, i, "stats", id)
		}
		c.mu[i].Unlock()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Stop stops every worker (they tear their parts down) and closes the
// transport.
func (c *Cluster) Stop(ctx context.Context) error {
	c.life.Lock()
	defer c.life.Unlock()
	c.stopped = true
	c.connsMu.Lock()
	conns := slices.Clone(c.conns)
	c.connsMu.Unlock()
	errs := make([]error, len(conns))
	var wg sync.WaitGroup
	for i, conn := range conns {
		if conn == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := conn.Stop(ctx); err != nil {
				errs[i] = fmt.Errorf("worker %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(append(errs, c.tr.Close())...)
}

// goneConn stands for a worker that could not be launched again: every
// exchange with it fails at once.
type goneConn int

func (g goneConn) Send(Command) error {
	return fmt.Errorf("worker %d is gone (it could not be launched again)", int(g))
}

func (goneConn) Events() <-chan Event {
	ch := make(chan Event)
	close(ch)
	return ch
}

func (goneConn) Stop(context.Context) error { return nil }
