package vm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/digitalocean/go-qemu/qmp"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// machine is one QEMU process and its QMP connection.
type machine struct {
	cmd    *exec.Cmd
	stderr *limitedBuffer
	exited chan struct{}
	paths  paths

	monMu sync.Mutex
	mon   *qmp.SocketMonitor
}

// startMachine starts QEMU inside the helper namespace ns, so the taps it
// opens for netdev_add live there, and connects QMP. Unless ShareHostRoot
// is set, QEMU runs as the unprivileged r.uid: it gets its sockets, console
// log and boot files as descriptors (see qemuArgs), and the taps are made
// for it by AttachIntf.
func startMachine(ctx context.Context, r *resolved, ns netns.NsHandle, kernel, initrd string) (_ *machine, err error) {
	if r.uid == 0 && !r.ShareHostRoot {
		return nil, errors.New("no unprivileged user to run QEMU as")
	}
	p := runPaths(r.RunDir)
	files, err := qemuFiles(r, p, kernel, initrd)
	defer func() {
		for _, f := range files {
			_ = f.Close() // QEMU has its copies: nothing is lost
		}
	}()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(r.QEMU, qemuArgs(r, kernel != "", initrd != "")...)
	cmd.ExtraFiles = files
	// Its own process group, so a Ctrl-C at the terminal reaches hymn (which
	// then shuts the VM down cleanly) and not QEMU directly; Pdeathsig ends
	// QEMU if hymn is killed outright. Go sets Pdeathsig after the switch
	// to r.uid, so it survives it (QEMU's own -runas would clear it); the
	// launcher thread that forks QEMU never ends, so it fires only with
	// hymn (netnsx.Launch).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if r.uid != 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: r.uid, Gid: r.uid, Groups: kvmGroups(r)}
		// snapshot=on disks get their overlay in TMPDIR, which must be
		// writable by r.uid.
		cmd.Env = append(os.Environ(), "TMPDIR=/var/tmp")
	}
	m := &machine{cmd: cmd, stderr: &limitedBuffer{max: 8 << 10}, exited: make(chan struct{}), paths: p}
	cmd.Stdout, cmd.Stderr = m.stderr, m.stderr
	if err := netnsx.Launch(ns, cmd.Start); err != nil {
		return nil, fmt.Errorf("starting %s: %w", r.QEMU, err)
	}
	// Wait's error is the exit status, which exitError reads from
	// ProcessState once m.exited is closed.
	go func() { _ = cmd.Wait(); close(m.exited) }()
	defer func() {
		if err != nil {
			m.kill()
		}
	}()
	if err := m.connectQMP(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// qemuFiles opens what QEMU inherits, in the order of the fd constants:
// the QMP and agent sockets (listening, mode 0600), the console log
// (created exclusively, 0600), the kernel and initrd, the disk image
// (read-only).
func qemuFiles(r *resolved, p paths, kernel, initrd string) (files []*os.File, err error) {
	add := func(f *os.File, err error) error {
		if err != nil {
			return err
		}
		files = append(files, f)
		return nil
	}
	if err := add(listenFile(p.QMP)); err != nil {
		return files, err
	}
	if err := add(listenFile(p.Agent)); err != nil {
		return files, err
	}
	if err := add(os.OpenFile(p.Console, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)); err != nil {
		return files, err
	}
	// Unused slots hold /dev/null so the numbers stay fixed.
	for _, path := range []string{kernel, initrd} {
		if path == "" {
			path = os.DevNull
		}
		if err := add(os.Open(path)); err != nil {
			return files, err
		}
	}
	if r.Image != "" {
		if err := add(os.Open(r.Image)); err != nil {
			return files, err
		}
	}
	return files, nil
}

// listenFile makes a listening unix socket at path (mode 0600) and returns
// it as a file for QEMU; the socket stays when hymn's copy is closed.
func listenFile(path string) (*os.File, error) {
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false)
	// Closing hymn's copy (QEMU gets the dup from File) cannot lose
	// anything: nothing was accepted on it.
	defer func() { _ = l.Close() }()
	if err := os.Chmod(path, 0o600); err != nil {
		return nil, err
	}
	return l.File()
}

// kvmGroups gives the unprivileged QEMU the group of /dev/kvm when it
// uses KVM.
func kvmGroups(r *resolved) []uint32 {
	if r.accel != AccelKVM {
		return nil
	}
	var st unix.Stat_t
	if unix.Stat("/dev/kvm", &st) != nil || st.Gid == 0 {
		return nil
	}
	return []uint32{st.Gid}
}

// exitError describes why QEMU ended, with what it printed.
func (m *machine) exitError() error {
	msg := strings.TrimSpace(m.stderr.String())
	if msg == "" {
		msg = m.cmd.ProcessState.String()
	}
	return fmt.Errorf("qemu exited: %s", msg)
}

func (m *machine) running() bool {
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// qmpTimeout bounds the wait for QEMU's QMP greeting, not counting the
// time the host kept QEMU waiting for a CPU (see bootClock): starting
// QEMU is CPU work that a busy host can stretch well past 15 s.
const qmpTimeout = 15 * time.Second

// qmpClock reports whether the QMP wait is over: qmpTimeout of QEMU's
// own time, or bootWallFactor times that on the wall clock.
type qmpClock struct{ *bootClock }

func (m *machine) newQMPClock() qmpClock {
	if m.cmd == nil || m.cmd.Process == nil {
		// No process to watch (tests): a wall clock.
		return qmpClock{newBootClock(time.Now(), func() (map[int]uint64, error) { return nil, errors.New("no QEMU process") })}
	}
	pid := m.cmd.Process.Pid
	return qmpClock{newBootClock(time.Now(), func() (map[int]uint64, error) { return schedstatDelays(pid) })}
}

func (c qmpClock) expired(now time.Time) bool {
	if now.Sub(c.last) >= bootTick {
		c.sample(now)
	}
	return c.own() >= qmpTimeout || c.wall() >= bootWallFactor*qmpTimeout
}

func (m *machine) connectQMP(ctx context.Context) error {
	clock := m.newQMPClock()
	for {
		if !m.running() {
			return m.exitError()
		}
		if _, err := os.Stat(m.paths.QMP); err == nil {
			mon, err := qmp.NewSocketMonitor("unix", m.paths.QMP, 2*time.Second)
			if err == nil {
				if err = m.qmpHandshake(ctx, mon, clock); err == nil {
					m.monMu.Lock()
					m.mon = mon
					m.monMu.Unlock()
					return nil
				}
				_ = mon.Disconnect() // a failed connection: the try is repeated
			}
			if clock.expired(time.Now()) {
				return fmt.Errorf("connecting to QMP: %w", err)
			}
		} else if clock.expired(time.Now()) {
			return fmt.Errorf("QMP socket did not appear within %v of QEMU's time", qmpTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// qmpHandshake reads QEMU's greeting and negotiates capabilities. hymn
// made the listening socket, so the connection is accepted at once even
// while QEMU is still busy starting (or stuck, say allocating a huge
// memory=): go-qemu's Connect would then wait for the greeting forever, so
// it runs on its own goroutine and the monitor is closed to end it.
func (m *machine) qmpHandshake(ctx context.Context, mon *qmp.SocketMonitor, clock qmpClock) error {
	done := make(chan error, 1)
	go func() { done <- mon.Connect() }()
	// abort closes the monitor, which ends that Connect, and waits for it.
	// Connect's error is then only the closed connection's: the reason
	// returned below is the news.
	abort := func() error {
		_ = mon.Disconnect()
		return <-done
	}
	tick := time.NewTicker(bootTick)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
			_ = abort()
			return ctx.Err()
		case <-m.exited:
			_ = abort()
			return m.exitError()
		case now := <-tick.C:
			if clock.expired(now) {
				_ = abort()
				return fmt.Errorf("QEMU accepted the QMP connection but sent no greeting within %v of its time", qmpTimeout)
			}
		}
	}
}

// qmpRun runs one QMP command and returns its "return" value. go-qemu's
// Run blocks until QEMU answers, so it runs on its own goroutine and a
// stuck QEMU cannot hang the caller beyond ctx.
func (m *machine) qmpRun(ctx context.Context, execute string, args any) (json.RawMessage, error) {
	m.monMu.Lock()
	mon := m.mon
	m.monMu.Unlock()
	if mon == nil {
		return nil, errors.New("QMP is not connected")
	}
	cmd := map[string]any{"execute": execute}
	if args != nil {
		cmd["arguments"] = args
	}
	raw, _ := json.Marshal(cmd)
	type result struct {
		out []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		out, err := mon.Run(raw)
		ch <- result{out, err}
	}()
	select {
	case res := <-ch:
		if res.err != nil {
			return nil, fmt.Errorf("QMP %s: %w", execute, res.err)
		}
		var resp struct {
			Return json.RawMessage `json:"return"`
		}
		if err := json.Unmarshal(res.out, &resp); err != nil {
			return nil, fmt.Errorf("QMP %s: reading the answer: %w", execute, err)
		}
		return resp.Return, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("QMP %s: %w", execute, ctx.Err())
	case <-m.exited:
		return nil, fmt.Errorf("QMP %s: %w", execute, m.exitError())
	}
}

// pinCPUs pins vCPU i's thread to cores[i]. QEMU reports the thread ids
// through query-cpus-fast.
func (m *machine) pinCPUs(ctx context.Context, cores []int) error {
	out, err := m.qmpRun(ctx, "query-cpus-fast", nil)
	if err != nil {
		return err
	}
	var cpus []struct {
		Index  int `json:"cpu-index"`
		Thread int `json:"thread-id"`
	}
	if err := json.Unmarshal(out, &cpus); err != nil {
		return fmt.Errorf("query-cpus-fast: %w", err)
	}
	for _, c := range cpus {
		if c.Index >= len(cores) {
			continue
		}
		var set unix.CPUSet
		set.Set(cores[c.Index])
		if err := unix.SchedSetaffinity(c.Thread, &set); err != nil {
			return fmt.Errorf("pinning vCPU %d (thread %d) to core %d: %w", c.Index, c.Thread, cores[c.Index], err)
		}
	}
	return nil
}

// wait waits up to d for QEMU to end.
func (m *machine) wait(d time.Duration) bool {
	select {
	case <-m.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// stop shuts the VM down: a guest poweroff through the agent (the guest
// flushes its disks), then QMP quit, then SIGKILL, each after a timeout.
func (m *machine) stop(a *Agent, grace time.Duration) {
	if m.running() && a != nil && a.Poweroff() == nil {
		m.wait(grace)
	}
	if m.running() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, _ = m.qmpRun(ctx, "quit", nil) // best effort: SIGKILL follows
		cancel()
		m.wait(2 * time.Second)
	}
	m.kill()
}

// kill ends QEMU at once and waits for it.
func (m *machine) kill() {
	if m.running() {
		// Either may find QEMU gone already (it can exit at any time).
		_ = syscall.Kill(-m.cmd.Process.Pid, syscall.SIGKILL)
		_ = m.cmd.Process.Kill()
		m.wait(5 * time.Second)
	}
	m.monMu.Lock()
	if m.mon != nil {
		_ = m.mon.Disconnect() // QEMU is dead: the socket has nothing to say
		m.mon = nil
	}
	m.monMu.Unlock()
}

// limitedBuffer keeps the first max bytes QEMU prints (its error messages).
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
