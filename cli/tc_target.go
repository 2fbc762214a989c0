package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/ui"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// tcTarget is the link interface a tc command names, in the run and node
// the command runs in, and the way to that run's hymn: its control socket
// (the live view's API: topology, counters, emulator changes).
type tcTarget struct {
	run   string
	nodes map[string]bool // the nodes of this namespace; nil: any
	dev   string
	link  *ui.LinkView // nil: dev is none of the nodes' link interfaces
	dir   string       // the link's direction leaving dev: a>b or b>a
	topo  *ui.Topology
	http  *http.Client
}

// controlSocket is the run's control socket (ui.ServeControl's name).
func controlSocket(run string) string { return "@hymn-ui-" + run }

// whereAmI finds the run and node of this process: hymn exec says them in
// the environment, else this process's network namespace is one of a
// run's nodes. errSystemTC when it is in none.
func whereAmI() (run string, nodes map[string]bool, err error) {
	run = os.Getenv(envRun)
	if run != "" && owner.ValidRunID(run) {
		if n := os.Getenv(envNode); n != "" {
			return run, map[string]bool{n: true}, nil
		}
	}
	var self unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &self); err != nil {
		return "", nil, errSystemTC
	}
	runs, _ := owner.Runs()
	for _, r := range runs {
		if run != "" && r != run {
			continue
		}
		names, _ := owner.Namespaces(r)
		found := map[string]bool{}
		for _, ns := range names {
			if ino, err := netnsx.Inode(ns); err == nil && ino == self.Ino {
				found[strings.TrimPrefix(ns, owner.Prefix+r+"-")] = true
			}
		}
		if len(found) > 0 {
			for n := range found {
				if strings.HasPrefix(n, "@") {
					// A namespace of hymn's own (the switches' shared one):
					// any node's interface name may be here.
					return r, nil, nil
				}
			}
			return r, found, nil
		}
	}
	return "", nil, errSystemTC
}

// controlClient speaks HTTP to run's control socket. The socket is an
// abstract one, bound in the network namespace of the process that runs
// the network: dialled from there, the connection then serves this
// process wherever it is.
func controlClient(run string) (*http.Client, error) {
	st, err := owner.ReadState(run)
	if err != nil {
		return nil, err
	}
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		h, err := netns.GetFromPath(fmt.Sprintf("/proc/%d/ns/net", st.PID))
		if err != nil {
			return nil, fmt.Errorf("run %s's namespace: %w", run, err)
		}
		defer func() { _ = h.Close() }() // our own descriptor
		var c net.Conn
		err = netnsx.Do(h, func() error {
			var d net.Dialer
			var err error
			c, err = d.DialContext(ctx, "unix", controlSocket(run))
			return err
		})
		return c, err
	}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: dial}}, nil
}

func (t *tcTarget) get(path string, v any) error {
	resp, err := t.http.Get("http://hymn-run" + path)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	return decodeControl(resp, v)
}

func decodeControl(resp *http.Response, v any) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error string }
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			return errors.New(e.Error)
		}
		return fmt.Errorf("%s", resp.Status)
	}
	return json.Unmarshal(body, v)
}

// findTCTarget finds dev among the links of the node this process is in.
func findTCTarget(dev string) (*tcTarget, error) {
	run, nodes, err := whereAmI()
	if err != nil {
		return nil, err
	}
	if !owner.Alive(run) {
		return nil, errSystemTC
	}
	client, err := controlClient(run)
	if err != nil {
		return nil, errSystemTC
	}
	t := &tcTarget{run: run, nodes: nodes, dev: dev, http: client}
	var topo ui.Topology
	if err := t.get("/api/topology", &topo); err != nil {
		// A run without a control socket (the Go API without
		// ui.ServeControl): the kernel's tc is all there is.
		return nil, errSystemTC
	}
	t.topo = &topo
	t.pick()
	return t, nil
}

// pick finds t.dev's link.
func (t *tcTarget) pick() {
	t.link, t.dir = nil, ""
	for i := range t.topo.Links {
		l := &t.topo.Links[i]
		if l.Kind == "control" || l.Kind == "cut" {
			continue
		}
		if l.Intf1 == t.dev && (t.nodes == nil || t.nodes[l.Node1]) {
			t.link, t.dir = l, "a>b"
			return
		}
		if l.Intf2 == t.dev && (t.nodes == nil || t.nodes[l.Node2]) {
			t.link, t.dir = l, "b>a"
			return
		}
	}
}

// forDev is t for another interface of the same node, or nil when that
// one is no link interface of it.
func (t *tcTarget) forDev(dev string) *tcTarget {
	if dev == "" {
		return nil
	}
	o := *t
	o.dev = dev
	o.pick()
	if o.link == nil {
		return nil
	}
	return &o
}

// node is the node whose interface t.dev is.
func (t *tcTarget) node() string {
	if t.dir == "a>b" {
		return t.link.Node1
	}
	return t.link.Node2
}

func (t *tcTarget) statePath() string {
	return filepath.Join(tcStateDir, t.run, t.node(), t.dev+".json")
}

func (t *tcTarget) loadState() (*tcState, error) {
	st := &tcState{}
	data, err := os.ReadFile(t.statePath())
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, st); err != nil {
		return nil, fmt.Errorf("%s: %w", t.statePath(), err)
	}
	st.touched = true
	return st, nil
}

func (t *tcTarget) saveState(st *tcState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := t.statePath() + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, t.statePath())
}

// lock serialises the tc commands on one interface.
func (t *tcTarget) lock() (unlock func(), err error) {
	dir := filepath.Dir(t.statePath())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	fd, err := unix.Open(filepath.Join(dir, t.dev+".lock"), unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		_ = unix.Close(fd)
		return nil, err
	}
	return func() { _ = unix.Close(fd) }, nil // closing releases the lock
}

// sample is dev's egress direction's latest counters.
func (t *tcTarget) sample() *ui.DirSample {
	var s ui.Sample
	if err := t.get("/api/stats", &s); err != nil {
		return nil
	}
	for _, l := range s.Links {
		if l.ID == t.link.ID {
			if t.dir == "a>b" {
				return &l.AB
			}
			return &l.BA
		}
	}
	return nil
}

// modify runs a qdisc or class change on t's interface: the tree changes
// as the kernel's would, and the emulator takes the configuration it
// stands for, live.
func (t *tcTarget) modify(c *tcCommand, stderr io.Writer) error {
	if t.link == nil {
		return errSystemTC
	}
	sweepTCState()
	unlock, err := t.lock()
	if err != nil {
		return err
	}
	defer unlock()
	st, err := t.loadState()
	if err != nil {
		return err
	}
	if err := st.apply(c); err != nil {
		return err
	}
	args, notes, err := st.emulatorArgs()
	if err != nil {
		return err
	}
	body, _ := json.Marshal(map[string]string{"node1": t.link.Node1, "node2": t.link.Node2, "dir": t.dir, "params": strings.Join(args, " ")})
	resp, err := t.http.Post("http://hymn-run/api/link/emu", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }() // read to the end below
	var res map[string]string
	if err := decodeControl(resp, &res); err != nil {
		return kernelErr("%v", err)
	}
	for _, n := range notes {
		_, _ = fmt.Fprintf(stderr, "hymn tc: %s\n", n)
	}
	return t.saveState(st)
}

// sweepTCState removes the trees kept for runs that ended.
func sweepTCState() {
	entries, _ := os.ReadDir(tcStateDir)
	for _, e := range entries {
		if owner.ValidRunID(e.Name()) && !owner.Alive(e.Name()) {
			_ = os.RemoveAll(filepath.Join(tcStateDir, e.Name())) // best effort: the next sweep retries
		}
	}
}
