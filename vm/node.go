package vm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Node is a VM node: a QEMU guest plus a helper namespace on the host that
// holds the guest's taps and the host ends of its links.
type Node struct {
	*netnsx.Named // the helper namespace: Namespace, NsHandle, Netlink
	cfg           *resolved

	m        *machine
	agent    *Agent
	bootTime time.Duration
	release  string

	ownRunDir bool // New made cfg.RunDir (Close removes it)

	mu     sync.Mutex
	intfs  map[string]*guestIntf
	nextID int
	closed bool
}

// guestIntf is one NIC hot-plugged into the guest.
type guestIntf struct {
	name          string // topology name, also in the guest (h1-eth0)
	tap, bridge   string // in the helper namespace
	netdev, devID string // QMP ids
	mac           net.HardwareAddr
}

var _ nodes.GuestNode = (*Node)(nil)

// New validates cfg, creates the helper namespace, boots the VM and waits
// until its agent answers. The boot image is built (or taken from the
// cache) when cfg.Kernel is empty. On failure nothing is left: no QEMU, no
// namespace, no run directory.
func New(ctx context.Context, cfg Config) (_ *Node, err error) {
	r, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if r.accel == AccelTCG && (cfg.Accel == "" || cfg.Accel == AccelAuto) {
		tcgWarnOnce.Do(func() {
			r.logf("*** Warning: /dev/kvm is not usable: VMs run under TCG emulation, boots take seconds (%d at a time) and guests run many times slower\n", BootConcurrency())
		})
	}
	kernel, initrd := r.Kernel, r.Initrd
	if kernel == "" {
		img, err := BuildImage(ctx, r.CacheDir)
		if err != nil {
			return nil, fmt.Errorf("vm %s: %w", r.Name, err)
		}
		kernel, initrd = img.Kernel, img.Initrd
	}
	if !r.ShareHostRoot && r.uid == 0 {
		r.uid = pickQEMUUser()
		picked := r.uid
		defer func() {
			if err != nil {
				releaseQEMUUser(picked)
			}
		}()
	}
	t0 := time.Now()
	named, err := netnsx.CreateNamed(r.Namespace)
	if err != nil {
		return nil, fmt.Errorf("vm %s: helper namespace: %w", r.Name, err)
	}
	n := &Node{Named: named, cfg: r, intfs: map[string]*guestIntf{}}
	defer func() {
		if err != nil {
			_ = n.Delete() // best effort: the start error is returned
		}
	}()
	// The helper namespace only switches frames between the link ends and
	// the taps: no IPv6 autoconfiguration chatter from its bridges. Only
	// quieter, so best effort (a kernel without IPv6 has no such file).
	_ = netnsx.Do(n.NsHandle(), func() error {
		return os.WriteFile("/proc/sys/net/ipv6/conf/default/disable_ipv6", []byte("1"), 0o644)
	})
	if err := makeRunDir(r.RunDir); err != nil {
		return nil, fmt.Errorf("vm %s: run directory: %w", r.Name, err)
	}
	n.ownRunDir = true
	// The boot slot is held from QEMU's start until the agent answers or
	// the boot fails. On failure it is handed on just before the deferred
	// Delete ends QEMU (deferred calls run last-in first-out): killing a
	// guest costs the next boot nothing.
	tSlot := time.Now()
	if err := boots.acquire(ctx, func() {
		r.logf("*** VM %s waits for a boot slot (%d VMs boot at a time)\n", r.Name, BootConcurrency())
	}); err != nil {
		return nil, fmt.Errorf("vm %s: waiting for a boot slot: %w", r.Name, err)
	}
	defer boots.release()
	slotWait := time.Since(tSlot)
	r.logf("*** Booting VM %s\n", r.Name)
	tBoot := time.Now()
	if n.m, err = startMachine(ctx, r, n.NsHandle(), kernel, initrd); err != nil {
		return nil, fmt.Errorf("vm %s: starting QEMU: %w", r.Name, err)
	}
	if len(r.CPUPin) > 0 {
		if err := n.m.pinCPUs(ctx, r.CPUPin); err != nil {
			return nil, fmt.Errorf("vm %s: cpupin: %w", r.Name, err)
		}
	}
	stalled, err := n.waitAgent(ctx, tBoot)
	if err != nil {
		return nil, fmt.Errorf("vm %s: boot: %w", r.Name, err)
	}
	n.bootTime = time.Since(t0)
	var detail []string
	if slotWait >= 100*time.Millisecond {
		detail = append(detail, fmt.Sprintf("%.1f s waiting for a boot slot", slotWait.Seconds()))
	}
	if stalled >= 100*time.Millisecond {
		detail = append(detail, fmt.Sprintf("%.1f s waiting for a CPU", stalled.Seconds()))
	}
	if len(detail) > 0 {
		r.logf("*** VM %s ready in %.1f s (%s)\n", r.Name, n.bootTime.Seconds(), strings.Join(detail, ", "))
	} else {
		r.logf("*** VM %s ready in %.1f s\n", r.Name, n.bootTime.Seconds())
	}
	return n, nil
}

func (r *resolved) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}

// waitAgent connects to the agent socket and pings until the guest agent
// answers, QEMU ends, or the boot's time (BootTimeout, not counting the
// time QEMU waited for a CPU; see bootClock) is up. QEMU started at
// start. It returns how long QEMU waited for a CPU.
func (n *Node) waitAgent(ctx context.Context, start time.Time) (time.Duration, error) {
	pid := n.Pid()
	clock := newBootClock(start, func() (map[int]uint64, error) { return schedstatDelays(pid) })
	bctx, cancel := context.WithCancelCause(ctx)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		n.watchBoot(bctx, cancel, clock)
	}()
	// The clock is only read once its watcher has ended.
	finish := func(err error) (time.Duration, error) {
		cancel(nil)
		<-watched
		return clock.stalled, err
	}
	for {
		if !n.m.running() {
			return finish(fmt.Errorf("%w%s", n.m.exitError(), n.consoleTail()))
		}
		a, err := DialAgent(n.m.paths.Agent)
		if err == nil {
			// One ping waits for the whole boot: QEMU holds the request
			// until the agent opens its port. A short per-try timeout would
			// only let stale pings pile up in the guest.
			pctx, pcancel := context.WithCancel(bctx)
			go func() {
				select {
				case <-n.m.exited:
					pcancel()
				case <-pctx.Done():
				}
			}()
			rel, err := a.Ping(pctx)
			pcancel()
			if err == nil {
				n.agent, n.release = a, rel
				return finish(nil)
			}
			_ = a.Close() // a connection that did not answer: tried again

		}
		select {
		case <-bctx.Done():
			if cause := context.Cause(bctx); errors.Is(cause, errBootTimeout) {
				return finish(fmt.Errorf("%w%s", cause, n.consoleTail()))
			}
			return finish(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// consoleTail returns the end of the console log, for boot errors.
func (n *Node) consoleTail() string {
	data, err := os.ReadFile(n.m.paths.Console)
	if err != nil || len(data) == 0 {
		return ""
	}
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return "; console:\n" + strings.TrimRight(string(data), "\n")
}

// Name returns the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// Kind returns KindHost: VM nodes are hosts.
func (n *Node) Kind() topo.Kind { return topo.KindHost }

// BootTime is the time from creating the node to the agent's first answer.
func (n *Node) BootTime() time.Duration { return n.bootTime }

// KernelRelease is the guest's kernel release (uname -r).
func (n *Node) KernelRelease() string { return n.release }

// Agent returns the guest agent client (file copies, raw requests).
func (n *Node) Agent() *Agent { return n.agent }

// ConsoleLog returns the path of the guest's serial console log (removed
// by Close).
func (n *Node) ConsoleLog() string { return runPaths(n.cfg.RunDir).Console }

// Pid returns the QEMU process id (0 before QEMU started).
func (n *Node) Pid() int {
	if n.m == nil || n.m.cmd.Process == nil {
		return 0
	}
	return n.m.cmd.Process.Pid
}

func (n *Node) live() (*Agent, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.agent == nil {
		return nil, nodes.ErrClosed
	}
	return n.agent, nil
}

// Cmd runs a command line in the guest's persistent shell (cwd, variables
// and background jobs persist, as in a namespace node) and returns its
// output.
func (n *Node) Cmd(ctx context.Context, line string) (string, error) {
	a, err := n.live()
	if err != nil {
		return "", err
	}
	out, _, err := a.Shell(ctx, line)
	if err != nil {
		return out, fmt.Errorf("vm %s: %w", n.cfg.Name, err)
	}
	return out, nil
}

// CmdStream runs a command line in the guest's persistent shell, writing
// its output to w as it comes (the interactive CLI), and returns its exit
// status.
func (n *Node) CmdStream(ctx context.Context, line string, w io.Writer) (int, error) {
	a, err := n.live()
	if err != nil {
		return -1, err
	}
	status, err := a.ShellStream(ctx, line, w)
	if err != nil {
		err = fmt.Errorf("vm %s: %w", n.cfg.Name, err)
	}
	return status, err
}

// Exec runs a program in the guest and waits for it. A non-zero exit is a
// result, not an error.
func (n *Node) Exec(ctx context.Context, name string, args ...string) (nodes.Result, error) {
	a, err := n.live()
	if err != nil {
		return nodes.Result{ExitCode: -1}, err
	}
	res, err := a.Exec(ctx, nil, name, args...)
	if err != nil {
		err = fmt.Errorf("vm %s: %w", n.cfg.Name, err)
	}
	return nodes.Result{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, err
}

// CopyIn writes a file into the guest.
func (n *Node) CopyIn(ctx context.Context, guestPath string, data []byte, mode uint32) error {
	a, err := n.live()
	if err != nil {
		return err
	}
	return a.WriteFile(ctx, guestPath, data, mode)
}

// CopyOut reads a file from the guest.
func (n *Node) CopyOut(ctx context.Context, guestPath string) ([]byte, error) {
	a, err := n.live()
	if err != nil {
		return nil, err
	}
	return a.ReadFile(ctx, guestPath)
}

// randomMAC returns a locally administered unicast MAC in QEMU's 52:54:00
// style (52 has the local bit set).
func randomMAC() net.HardwareAddr {
	b := make([]byte, 3)
	rand.Read(b)
	return net.HardwareAddr{0x52, 0x54, 0x00, b[0], b[1], b[2]}
}

// AttachIntf joins the helper-namespace end called name to the guest: a
// bridge in the helper namespace takes that end and a tap that QEMU
// creates (netdev_add), a virtio NIC on the tap is hot-plugged
// (device_add), and the agent renames the new guest interface to name,
// adds ip and sets it up. mac nil means a generated one.
func (n *Node) AttachIntf(ctx context.Context, name string, mac net.HardwareAddr, ip netip.Prefix) (err error) {
	if _, err := n.live(); err != nil {
		return err
	}
	if len(mac) == 0 {
		mac = randomMAC()
	}
	n.mu.Lock()
	if _, dup := n.intfs[name]; dup {
		n.mu.Unlock()
		return fmt.Errorf("vm %s: interface %s is already attached", n.cfg.Name, name)
	}
	id := n.nextID
	n.nextID++
	gi := &guestIntf{name: name, tap: fmt.Sprintf("vtap%d", id), bridge: fmt.Sprintf("vbr%d", id),
		netdev: fmt.Sprintf("net%d", id), devID: fmt.Sprintf("nic%d", id), mac: mac}
	n.mu.Unlock()
	if n.cfg.q35 && id >= q35RootPorts {
		return fmt.Errorf("vm %s: interface %s: q35 VMs take at most %d hot-plugged NICs", n.cfg.Name, name, q35RootPorts)
	}
	wrap := func(err error) error { return fmt.Errorf("vm %s: attaching %s: %w", n.cfg.Name, name, err) }

	// The bridge, the helper end and the tap first: hymn makes the tap
	// (owned by QEMU's user, so the unprivileged QEMU may open it) and
	// QEMU attaches to it by name. The link's MTU (set on the helper end
	// by the network) is carried to the tap and the guest, so jumbo frames
	// pass every hop.
	mtu := 0
	err = netnsx.Do(n.NsHandle(), func() error {
		end, err := netlink.LinkByName(name)
		if err != nil {
			return err
		}
		if m := end.Attrs().MTU; m != 1500 {
			mtu = m
		}
		// The end must not carry the guest's MAC: a bridge delivers frames
		// for a port's own address to itself instead of forwarding them.
		if string(end.Attrs().HardwareAddr) == string(mac) {
			if err := netlink.LinkSetHardwareAddr(end, randomMAC()); err != nil {
				return fmt.Errorf("changing the MAC of %s: %w", name, err)
			}
		}
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: gi.bridge}}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("creating bridge %s: %w", gi.bridge, err)
		}
		if err := netlink.LinkSetMaster(end, br); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(br); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(end); err != nil {
			return err
		}
		tap, err := n.newTap(gi.tap, mtu)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetMaster(tap, br); err != nil {
			return err
		}
		return netlink.LinkSetUp(tap)
	})
	if err != nil {
		n.removeBridge(gi)
		return wrap(err)
	}
	if _, err := n.m.qmpRun(ctx, "netdev_add", map[string]any{
		"type": "tap", "id": gi.netdev, "ifname": gi.tap, "script": "no", "downscript": "no",
	}); err != nil {
		n.removeBridge(gi)
		return wrap(err)
	}
	undo := func() {
		cctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		// Best effort beside the error returned.
		_, _ = n.m.qmpRun(cctx, "device_del", map[string]any{"id": gi.devID})
		_, _ = n.m.qmpRun(cctx, "netdev_del", map[string]any{"id": gi.netdev})
		n.removeBridge(gi)
	}
	dev := map[string]any{"driver": "virtio-net-pci", "id": gi.devID, "netdev": gi.netdev, "mac": mac.String()}
	if !n.cfg.Offload {
		// Without the CSUM feature the guest checksums every frame itself
		// (and cannot use TSO), so frames survive any forwarder.
		dev["csum"] = false
	}
	if n.cfg.q35 {
		dev["bus"] = fmt.Sprintf("rp%d", id+1)
	}
	if _, err := n.m.qmpRun(ctx, "device_add", dev); err != nil {
		undo()
		return wrap(err)
	}
	if err := n.agent.ConfigureIntf(ctx, mac, name, mtu, ip); err != nil {
		undo()
		return wrap(err)
	}
	n.mu.Lock()
	n.intfs[name] = gi
	n.mu.Unlock()
	return nil
}

// newTap makes a persistent tap that QEMU's user may open (netdev_add
// type=tap ifname=name), with the MTU mtu (0: the default). It must run in
// the helper namespace: /dev/net/tun makes the tap in the namespace of the
// calling thread.
func (n *Node) newTap(name string, mtu int) (netlink.Link, error) {
	tap := &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Name: name}, Mode: netlink.TUNTAP_MODE_TAP,
		Flags: netlink.TUNTAP_NO_PI | netlink.TUNTAP_VNET_HDR | netlink.TUNTAP_TUN_EXCL, Owner: n.cfg.uid, Group: n.cfg.uid}
	if err := netlink.LinkAdd(tap); err != nil {
		return nil, fmt.Errorf("creating tap %s: %w", name, err)
	}
	if mtu > 0 {
		if err := netlink.LinkSetMTU(tap, mtu); err != nil {
			_ = netlink.LinkDel(tap) // best effort: the MTU error is returned
			return nil, fmt.Errorf("MTU %d on %s: %w", mtu, name, err)
		}
	}
	return tap, nil
}

// grantVFIO lets the unprivileged QEMU use a device passed through with
// vfio-pci: its IOMMU group's /dev/vfio node becomes the VM user's, and
// QEMU may lock the guest's memory (VFIO pins it).
func (n *Node) grantVFIO(dev map[string]any) error {
	if n.cfg.uid == 0 || dev["driver"] != "vfio-pci" {
		return nil
	}
	host, _ := dev["host"].(string)
	if host == "" {
		return nil
	}
	link, err := os.Readlink(filepath.Join("/sys/bus/pci/devices", filepath.Base(host), "iommu_group"))
	if err != nil {
		return fmt.Errorf("vfio %s: no IOMMU group: %w", host, err)
	}
	group := filepath.Join("/dev/vfio", filepath.Base(link))
	if err := os.Chown(group, int(n.cfg.uid), int(n.cfg.uid)); err != nil {
		return fmt.Errorf("vfio %s: %w", host, err)
	}
	lim := unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
	if err := unix.Prlimit(n.Pid(), unix.RLIMIT_MEMLOCK, &lim, nil); err != nil {
		return fmt.Errorf("vfio %s: memlock limit of qemu: %w", host, err)
	}
	return nil
}

// AttachDevice hot-plugs a ready-made device (a VF passed through with
// vfio-pci, from sriov.PassthroughVF) whose guest interface has the MAC
// mac, then names that interface name in the guest, adds ip and sets it
// up. On q35 a free root port is chosen when dev has no "bus". dev must
// have an "id"; DetachDevice removes it again.
func (n *Node) AttachDevice(ctx context.Context, name string, dev map[string]any, mac net.HardwareAddr, ip netip.Prefix) error {
	a, err := n.live()
	if err != nil {
		return err
	}
	id, _ := dev["id"].(string)
	if id == "" || len(mac) == 0 {
		return fmt.Errorf("vm %s: attaching %s: the device needs an id and the interface's MAC", n.cfg.Name, name)
	}
	if _, ok := dev["bus"]; !ok && n.cfg.q35 {
		n.mu.Lock()
		port := n.nextID
		n.nextID++
		n.mu.Unlock()
		if port >= q35RootPorts {
			return fmt.Errorf("vm %s: attaching %s: no free PCIe root port", n.cfg.Name, name)
		}
		dev = maps.Clone(dev)
		dev["bus"] = fmt.Sprintf("rp%d", port+1)
	}
	if err := n.grantVFIO(dev); err != nil {
		return fmt.Errorf("vm %s: attaching %s: %w", n.cfg.Name, name, err)
	}
	if _, err := n.m.qmpRun(ctx, "device_add", dev); err != nil {
		return fmt.Errorf("vm %s: attaching %s: %w", n.cfg.Name, name, err)
	}
	if err := a.ConfigureIntf(ctx, mac, name, 0, ip); err != nil {
		_ = n.DetachDevice(context.Background(), id) // best effort: the configure error is returned
		return fmt.Errorf("vm %s: attaching %s: %w", n.cfg.Name, name, err)
	}
	return nil
}

// DetachDevice unplugs a device added by AttachDevice.
func (n *Node) DetachDevice(ctx context.Context, id string) error {
	if _, err := n.live(); err != nil {
		return err
	}
	if _, err := n.m.qmpRun(ctx, "device_del", map[string]any{"id": id}); err != nil {
		return fmt.Errorf("vm %s: %w", n.cfg.Name, err)
	}
	return nil
}

// DetachIntf unplugs an interface AttachIntf attached (a link removed
// while the network runs): the virtio NIC and its netdev leave the guest,
// and the tap and bridge in the helper namespace go. The guest sees its
// NIC vanish as on a hot unplug; the helper end is the link's to delete.
func (n *Node) DetachIntf(ctx context.Context, name string) error {
	n.mu.Lock()
	gi, ok := n.intfs[name]
	delete(n.intfs, name)
	n.mu.Unlock()
	if !ok {
		return fmt.Errorf("vm %s: no interface %s to detach", n.cfg.Name, name)
	}
	var errs []error
	if _, err := n.live(); err == nil {
		for _, c := range []struct{ cmd, id string }{{"device_del", gi.devID}, {"netdev_del", gi.netdev}} {
			if _, err := n.m.qmpRun(ctx, c.cmd, map[string]any{"id": c.id}); err != nil {
				errs = append(errs, fmt.Errorf("vm %s: detaching %s: %s: %w", n.cfg.Name, name, c.cmd, err))
			}
		}
	}
	n.removeBridge(gi)
	return errors.Join(errs...)
}

// RejoinIntf joins a helper-namespace end made again under an attached
// interface's name (the old one was deleted: a cluster's cut link re-made
// toward a replaced peer) to that interface's bridge. The guest's NIC,
// MAC and address stay as they were, so nothing changes inside the guest.
func (n *Node) RejoinIntf(name string) error {
	n.mu.Lock()
	gi, ok := n.intfs[name]
	n.mu.Unlock()
	if !ok {
		return fmt.Errorf("vm %s: no interface %s to rejoin", n.cfg.Name, name)
	}
	return n.Netlink(func(h *netlink.Handle) error {
		end, err := h.LinkByName(name)
		if err != nil {
			return fmt.Errorf("vm %s: rejoining %s: %w", n.cfg.Name, name, err)
		}
		br, err := h.LinkByName(gi.bridge)
		if err != nil {
			return fmt.Errorf("vm %s: rejoining %s: %w", n.cfg.Name, name, err)
		}
		if err := h.LinkSetMaster(end, br); err != nil {
			return fmt.Errorf("vm %s: rejoining %s to %s: %w", n.cfg.Name, name, gi.bridge, err)
		}
		return h.LinkSetUp(end)
	})
}

// removeBridge removes an interface's bridge and tap (hymn made the tap
// persistent, so it outlives QEMU's netdev).
// It is a cleanup beside another error or a detach: best effort, and
// whatever stays goes with the helper namespace.
func (n *Node) removeBridge(gi *guestIntf) {
	_ = n.Netlink(func(h *netlink.Handle) error {
		for _, name := range []string{gi.tap, gi.bridge} {
			if l, err := h.LinkByName(name); err == nil {
				_ = h.LinkDel(l)
			}
		}
		return nil
	})
}

// Intfs returns the names of the attached interfaces.
func (n *Node) Intfs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for name := range n.intfs {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// SetIntfUp brings a guest interface up or down: the virtual NIC's link
// (QMP set_link, so the guest sees the carrier go) and the guest
// interface's administrative state (so `ip link` in the guest shows it, as
// Mininet's link command does on namespace nodes).
func (n *Node) SetIntfUp(ctx context.Context, name string, up bool) error {
	a, err := n.live()
	if err != nil {
		return err
	}
	n.mu.Lock()
	gi := n.intfs[name]
	n.mu.Unlock()
	if gi == nil {
		return fmt.Errorf("vm %s: no interface %s", n.cfg.Name, name)
	}
	if _, err := n.m.qmpRun(ctx, "set_link", map[string]any{"name": gi.devID, "up": up}); err != nil {
		return fmt.Errorf("vm %s: %s: %w", n.cfg.Name, name, err)
	}
	if err := a.SetLinkUp(ctx, name, up); err != nil {
		return fmt.Errorf("vm %s: %w", n.cfg.Name, err)
	}
	return nil
}

// Close shuts the VM down (guest poweroff, then QMP quit, then kill) and
// frees the node's handles and run directory. The helper namespace stays:
// the network deletes it (Delete) after the links, as for namespace nodes.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil
	}
	n.closed = true
	n.mu.Unlock()
	if n.m != nil {
		n.m.stop(n.agent, 3*time.Second)
	}
	if n.cfg.QEMUUser == 0 && n.cfg.uid != 0 {
		releaseQEMUUser(n.cfg.uid)
	}
	if n.agent != nil {
		_ = n.agent.Close() // QEMU is gone: the connection has nothing left to lose
	}
	n.Named.Close()
	var err error
	if n.cfg.RunDir != "" && n.ownRunDir {
		err = os.RemoveAll(n.cfg.RunDir)
		_ = os.Remove(RunBase) // only succeeds once no other VM uses it
	}
	return err
}

// Halt shuts the guest down cleanly (Close) before the network sweeps the
// helper namespace's processes. Halt has no error to return (hymn's node
// interface): Close's only one is a run directory left behind, which
// `hymn clean` removes (RemoveRunDirs).
func (n *Node) Halt() { _ = n.Close() }

// Delete closes the node and removes its helper namespace (and with it
// every bridge and link end in it; the taps went with QEMU).
func (n *Node) Delete() error {
	return errors.Join(n.Close(), n.Named.Delete())
}

// RemoveRunDirs removes the run directories of VM nodes whose helper
// namespace names start with prefix (owner.Prefix+run+"-" for one run):
// what `hymn clean` must add after killing a crashed run's processes.
func RemoveRunDirs(prefix string) error {
	entries, err := os.ReadDir(RunBase)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			errs = append(errs, os.RemoveAll(RunBase+"/"+e.Name()))
		}
	}
	return errors.Join(errs...)
}
