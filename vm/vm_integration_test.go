package vm

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"bufio"
	"syscall"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
)

// The VM tests share one VM per test binary: a TCG boot costs seconds.
var (
	sharedOnce sync.Once
	sharedVM   *Node
	sharedErr  error
	sharedRun  = owner.NewRunID()
)

// testBootTimeout is generous: these tests check what a VM does, not how
// fast it boots, and TCG boots on a loaded 2-core CI machine (other test
// packages, -race) have taken over 60 s.
const testBootTimeout = 150 * time.Second

func vmPrereqs() string {
	if os.Geteuid() != 0 {
		return "VM tests need root (namespaces, taps)"
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
	}
	if _, _, err := findKernel("", "/lib/modules"); err != nil {
		return err.Error()
	}
	if _, err := findBusybox(""); err != nil {
		return err.Error()
	}
	return ""
}

func bootShared(t *testing.T) *Node {
	t.Helper()
	if why := vmPrereqs(); why != "" {
		testenv.Skip(t, why)
	}
	sharedOnce.Do(func() {
		// Claimed, so a `hymn clean` run by other tests on this machine
		// does not take the shared VM for a crashed run's leftover.
		if sharedErr = owner.Claim(sharedRun); sharedErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		sharedVM, sharedErr = New(ctx, Config{
			Name:        "vm1",
			Namespace:   owner.NamespaceName(sharedRun, "vm1"),
			Logf:        func(f string, a ...any) { fmt.Fprintf(os.Stderr, f, a...) },
			BootTimeout: testBootTimeout,
		})
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return sharedVM
}

func TestMain(m *testing.M) {
	if run := os.Getenv("HYMN_VM_KILL_CHILD"); run != "" {
		killChild(run)
		return
	}
	code := m.Run()
	if sharedVM != nil {
		t0 := time.Now()
		if err := sharedVM.Delete(); err != nil {
			fmt.Fprintln(os.Stderr, "deleting the shared VM:", err)
			code = 1
		}
		fmt.Fprintf(os.Stderr, "shared VM shut down in %v\n", time.Since(t0))
		if msg := leftovers(sharedVM); msg != "" {
			fmt.Fprintln(os.Stderr, "left behind:", msg)
			code = 1
		}
	}
	if err := owner.Release(sharedRun); err != nil {
		fmt.Fprintln(os.Stderr, "releasing the shared run:", err)
		code = 1
	}
	os.Exit(code)
}

// leftovers reports what a deleted VM node left on the host.
func leftovers(n *Node) string {
	var left []string
	if _, err := os.Stat(netnsx.Path(n.Namespace())); err == nil {
		left = append(left, "namespace "+n.Namespace())
	}
	if _, err := os.Stat(n.cfg.RunDir); err == nil {
		left = append(left, "run dir "+n.cfg.RunDir)
	}
	if err := exec.Command("kill", "-0", fmt.Sprint(n.Pid())).Run(); err == nil {
		left = append(left, fmt.Sprintf("qemu pid %d", n.Pid()))
	}
	return strings.Join(left, ", ")
}

func TestVMBootAndCmd(t *testing.T) {
	n := bootShared(t)
	t.Logf("boot time %v, kernel %s", n.BootTime(), n.KernelRelease())
	ctx := context.Background()
	res, err := n.Exec(ctx, "uname", "-r")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(res.Stdout)); got != n.KernelRelease() || got == "" {
		t.Fatalf("uname -r = %q, want %q", got, n.KernelRelease())
	}
	t0 := time.Now()
	if _, err := n.Cmd(ctx, "cd /tmp; V=7; sleep 60 &"); err != nil {
		t.Fatal(err)
	}
	t.Logf("first Cmd took %v", time.Since(t0))
	out, err := n.Cmd(ctx, "pwd; echo $V; jobs")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "/tmp\n7\n") || !strings.Contains(out, "Running") {
		t.Fatalf("shell state did not persist: %q", out)
	}
	if _, err := n.Cmd(ctx, "kill %1; cd /"); err != nil {
		t.Error(err)
	}
	out, _ = n.Cmd(ctx, "hostname")
	if strings.TrimSpace(out) != "vm1" {
		t.Errorf("hostname = %q, want vm1", out)
	}
	cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := n.Cmd(cctx, "sleep 30"); err == nil {
		t.Fatal("canceled command returned no error")
	}
	if out, err := n.Cmd(ctx, "echo ok"); err != nil || out != "ok\n" {
		t.Fatalf("after cancel: %q %v", out, err)
	}
}

func TestVMFiles(t *testing.T) {
	n := bootShared(t)
	ctx := context.Background()
	if err := n.CopyIn(ctx, "/tmp/x", []byte("hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, _ := n.Cmd(ctx, "cat /tmp/x; stat -c %a /tmp/x"); out != "hello\n755\n" {
		t.Fatalf("got %q", out)
	}
	data, err := n.CopyOut(ctx, "/proc/version")
	if err != nil || !strings.Contains(string(data), "Linux") {
		t.Fatalf("copy out: %q %v", data, err)
	}
}

// peerNS is a plain namespace node for the other end of a link.
func TestVMLink(t *testing.T) {
	n := bootShared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	peer, err := nodes.New(nodes.Config{Name: "p1", Kind: topo.KindHost, Namespace: owner.NamespaceName(sharedRun, "p1")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := peer.Delete(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(netnsx.Path(peer.Namespace())); err == nil {
			t.Errorf("peer namespace left behind")
		}
	}()
	vmIP := netip.MustParsePrefix("10.77.0.1/24")
	peerIP := netip.MustParsePrefix("10.77.0.2/24")
	mac, _ := net.ParseMAC("52:54:00:aa:00:01")
	// As the network does for a VM node: the helper end has no address.
	if _, err := links.CreateVeth(links.End{NS: n, Name: "vm1-eth0"}, links.End{NS: peer, Name: "p1-eth0", IP: peerIP}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if err := n.AttachIntf(ctx, "vm1-eth0", mac, vmIP); err != nil {
		t.Fatal(err)
	}
	t.Logf("attach took %v", time.Since(t0))
	out, err := n.Cmd(ctx, "ip addr show vm1-eth0")
	if err != nil || !strings.Contains(out, "10.77.0.1/24") || !strings.Contains(out, "52:54:00:aa:00:01") {
		t.Fatalf("guest interface: %q %v", out, err)
	}
	// No checksum offload towards the host by default (see Config.Offload).
	if out, err := n.Cmd(ctx, "ethtool -k vm1-eth0 | grep tx-checksumming"); err == nil && strings.Contains(out, "tx-checksumming") {
		t.Logf("guest: %s", strings.TrimSpace(out))
		if !strings.Contains(out, ": off") {
			t.Errorf("guest NIC offloads TX checksums: %q", out)
		}
	}
	ping := func(from string) bool {
		if from == "vm" {
			out, _ := n.Cmd(ctx, "ping -c1 -W2 10.77.0.2 >/dev/null; echo $?")
			return strings.TrimSpace(out) == "0"
		}
		out, _ := peer.Cmd(ctx, "ping -c1 -W2 10.77.0.1 >/dev/null; echo $?")
		return strings.TrimSpace(out) == "0"
	}
	if !ping("vm") || !ping("peer") {
		t.Fatal("ping between the VM and the namespace failed")
	}
	if err := n.SetIntfUp(ctx, "vm1-eth0", false); err != nil {
		t.Fatal(err)
	}
	if ping("peer") {
		t.Fatal("ping passed with the link down")
	}
	if err := n.SetIntfUp(ctx, "vm1-eth0", true); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !ping("peer") {
		if time.Now().After(deadline) {
			t.Fatal("ping did not come back after link up")
		}
	}
	if !ping("vm") {
		t.Fatal("ping from the VM failed after link up")
	}
	// The host's iperf3 runs in the guest through the shared host file
	// system; TCG makes it slow, but it must move data.
	if _, err := exec.LookPath("iperf3"); err == nil {
		if out, err := n.Cmd(ctx, "iperf3 -s -1 -D; sleep 0.5; echo started"); err != nil || !strings.Contains(out, "started") {
			t.Fatalf("iperf3 server in the VM: %q %v", out, err)
		}
		out, err := peer.Cmd(ctx, "iperf3 -c 10.77.0.1 -t 1 -f m | grep receiver")
		t.Logf("iperf3 peer->vm: %s", strings.TrimSpace(out))
		if err != nil || !strings.Contains(out, "Mbits/sec") {
			t.Errorf("iperf3 into the VM: %q %v", out, err)
		}
	}
}

func TestVMHostTools(t *testing.T) {
	n := bootShared(t)
	ctx := context.Background()
	out, err := n.Cmd(ctx, "ls /host/etc/hostname >/dev/null && echo mounted; command -v ping")
	if err != nil || !strings.HasPrefix(out, "mounted\n") {
		t.Fatalf("host file system not shared: %q %v", out, err)
	}
	if _, err := os.Stat("/usr/bin/ping"); err == nil && !strings.Contains(out, "/usr/local/bin/ping") {
		t.Errorf("ping is not the host's: %q", out)
	}
	if _, err := os.Stat("/usr/bin/ping"); err == nil {
		if out, err := n.Cmd(ctx, "ping -c1 127.0.0.1"); err != nil || !strings.Contains(out, "1 received") {
			t.Errorf("host ping in the guest: %q %v", out, err)
		}
	}
}

// killChild is the process TestVMKill9 kills: it boots a VM in run and
// waits to be killed.
func killChild(run string) {
	if err := owner.Claim(run); err != nil {
		fmt.Println("ERR", err)
		return
	}
	n, err := New(context.Background(), Config{Name: "k1", Namespace: owner.NamespaceName(run, "k1"), BootTimeout: testBootTimeout})
	if err != nil {
		fmt.Println("ERR", err)
		return
	}
	fmt.Println("READY", n.Pid())
	select {}
}

// TestVMKill9 kills hymn (here: a child test process) with SIGKILL while
// its VM runs: QEMU must die with it, and what `hymn clean` does
// (owner.RemoveRun plus RemoveRunDirs) must leave nothing behind.
func TestVMKill9(t *testing.T) {
	if why := vmPrereqs(); why != "" {
		testenv.Skip(t, why)
	}
	if testing.Short() {
		t.Skip("boots a second VM")
	}
	run := owner.NewRunID()
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "HYMN_VM_KILL_CHILD="+run)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	// A safety net for a test that failed part-way: the test itself kills
	// the child and removes the run, checking each, so here all of it is
	// best effort (the child is usually gone already).
	defer func() {
		_ = child.Process.Kill()
		_ = child.Wait()
		_, _, _ = owner.RemoveRun(run)
		_ = RemoveRunDirs(owner.Prefix + run + "-")
	}()
	line, _ := bufio.NewReader(out).ReadString('\n')
	var qemuPid int
	if _, err := fmt.Sscanf(line, "READY %d", &qemuPid); err != nil {
		t.Fatalf("child: %q", line)
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait() // killed: its error is the signal
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(qemuPid, 0) == nil && !isZombie(qemuPid) {
		if time.Now().After(deadline) {
			t.Fatalf("qemu %d survived the kill -9 of its owner", qemuPid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, _, err := owner.RemoveRun(run); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRunDirs(owner.Prefix + run + "-"); err != nil {
		t.Fatal(err)
	}
	ns := owner.NamespaceName(run, "k1")
	if _, err := os.Stat(netnsx.Path(ns)); err == nil {
		t.Errorf("namespace %s left behind", ns)
	}
	if _, err := os.Stat(RunBase + "/" + ns); err == nil {
		t.Errorf("run dir of %s left behind", ns)
	}
}

func isZombie(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(data), ')')
	return i > 0 && i+2 < len(data) && data[i+2] == 'Z'
}

// TestVMQ35 boots a second VM on q35 (hot-plug into PCIe root ports) with
// two vCPUs pinned through QMP, and pings through a hot-plugged NIC.
func TestVMQ35(t *testing.T) {
	if why := vmPrereqs(); why != "" {
		testenv.Skip(t, why)
	}
	if testing.Short() {
		t.Skip("boots a second VM")
	}
	cores := hostCPUs()
	pin := []int{}
	for c := 0; c < 4096 && len(pin) < 2; c++ {
		if cores[c] {
			pin = append(pin, c)
		}
	}
	if len(pin) < 2 {
		pin = append(pin, pin[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := claimRun(t)
	// A disk image only root may read (0600 in a 0700 directory): QEMU,
	// unprivileged, reads it through the descriptor hymn passes.
	image := filepath.Join(t.TempDir(), "disk.raw")
	if err := os.WriteFile(image, append([]byte("hymn-disk-marker"), make([]byte, 1<<20)...), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := New(ctx, Config{Name: "q1", Namespace: owner.NamespaceName(run, "q1"), Machine: "q35", CPUs: 2, CPUPin: pin, Memory: "320M", Image: image, BootTimeout: testBootTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Delete(); err != nil {
			t.Error(err)
		}
		if msg := leftovers(n); msg != "" {
			t.Errorf("left behind: %s", msg)
		}
	}()
	t.Logf("q35 boot %v", n.BootTime())
	// Each vCPU thread is pinned to its core.
	out, err := exec.Command("sh", "-c", fmt.Sprintf("for t in /proc/%d/task/*; do grep -H Cpus_allowed_list $t/status; done", n.Pid())).Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), fmt.Sprintf("Cpus_allowed_list:\t%d\n", pin[1])) {
		t.Errorf("no thread pinned to core %d:\n%s", pin[1], out)
	}
	if got, _ := n.Cmd(ctx, "grep -c ^processor /proc/cpuinfo"); strings.TrimSpace(got) != "2" {
		t.Errorf("guest sees %q CPUs, want 2", got)
	}
	if got, _ := n.Cmd(ctx, "head -c 16 /dev/vda"); got != "hymn-disk-marker" {
		t.Errorf("guest disk starts with %q", got)
	}
	peer, err := nodes.New(nodes.Config{Name: "p2", Kind: topo.KindHost, Namespace: owner.NamespaceName(run, "p2")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := peer.Delete(); err != nil {
			t.Error(err)
		}
	}()
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("q1-eth%d", i)
		if _, err := links.CreateVeth(links.End{NS: n, Name: name}, links.End{NS: peer, Name: fmt.Sprintf("p2-eth%d", i), IP: netip.MustParsePrefix(fmt.Sprintf("10.78.%d.2/24", i))}); err != nil {
			t.Fatal(err)
		}
		if err := n.AttachIntf(ctx, name, nil, netip.MustParsePrefix(fmt.Sprintf("10.78.%d.1/24", i))); err != nil {
			t.Fatal(err)
		}
		if out, _ := n.Cmd(ctx, fmt.Sprintf("ping -c1 -W3 10.78.%d.2 >/dev/null; echo $?", i)); strings.TrimSpace(out) != "0" {
			t.Fatalf("ping over %s failed", name)
		}
	}
}

// TestVMPairViaSwitch is `--topo single,2 --nodes vm` by hand: two VMs
// booted concurrently, each linked to a switch namespace (a Linux
// bridge), pinging each other.
func TestVMPairViaSwitch(t *testing.T) {
	if why := vmPrereqs(); why != "" {
		testenv.Skip(t, why)
	}
	if testing.Short() {
		t.Skip("boots two more VMs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := claimRun(t)
	sw, err := nodes.New(nodes.Config{Name: "s1", Kind: topo.KindSwitch, Namespace: owner.NamespaceName(run, "s1")})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sw.Delete(); err != nil {
			t.Error(err)
		}
	}()
	vms := make([]*Node, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range vms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("h%d", i+1)
			vms[i], errs[i] = New(ctx, Config{Name: name, Namespace: owner.NamespaceName(run, name), BootTimeout: testBootTimeout})
		}()
	}
	wg.Wait()
	t.Logf("two concurrent boots took %v", time.Since(t0))
	for i, n := range vms {
		if n != nil {
			defer func() {
				if err := n.Delete(); err != nil {
					t.Error(err)
				}
				if msg := leftovers(n); msg != "" {
					t.Errorf("left behind: %s", msg)
				}
			}()
		}
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	for i, n := range vms {
		intf, port := fmt.Sprintf("h%d-eth0", i+1), fmt.Sprintf("s1-eth%d", i+1)
		if _, err := links.CreateVeth(links.End{NS: n, Name: intf}, links.End{NS: sw, Name: port}); err != nil {
			t.Fatal(err)
		}
		if err := sw.AttachPort(port); err != nil {
			t.Fatal(err)
		}
		if err := n.AttachIntf(ctx, intf, nil, netip.MustParsePrefix(fmt.Sprintf("10.0.0.%d/8", i+1))); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range vms {
		out, err := n.Cmd(ctx, fmt.Sprintf("ping -c1 -W3 10.0.0.%d", 2-i))
		if err != nil || !strings.Contains(out, "1 received") {
			t.Fatalf("h%d ping: %q %v", i+1, out, err)
		}
	}
}

// TestVMBootFailureLeavesNothing boots a "kernel" QEMU refuses: New must
// report QEMU's message and leave no process, namespace or run directory.
func TestVMBootFailureLeavesNothing(t *testing.T) {
	if why := vmPrereqs(); why != "" {
		testenv.Skip(t, why)
	}
	run := owner.NewRunID()
	ns := owner.NamespaceName(run, "bad")
	bogus := t.TempDir() + "/vmlinuz"
	if err := os.WriteFile(bogus, []byte("not a kernel"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Config{Name: "bad", Namespace: ns, Kernel: bogus, BootTimeout: 20 * time.Second})
	if err == nil {
		t.Fatal("a bogus kernel booted")
	}
	t.Logf("error: %v", err)
	if !strings.Contains(err.Error(), "qemu exited") {
		t.Errorf("error does not say QEMU failed: %v", err)
	}
	if _, err := os.Stat(netnsx.Path(ns)); err == nil {
		t.Errorf("namespace %s left behind", ns)
	}
	if _, err := os.Stat(RunBase + "/" + ns); err == nil {
		t.Errorf("run dir left behind")
	}
	if out, _ := exec.Command("pgrep", "-f", "hymn:bad").Output(); len(out) > 0 {
		t.Errorf("qemu left running: %s", out)
	}
}

// TestVMBootTimeoutLeavesNothing boots a guest whose init is a shell
// waiting on a console without input, so no agent ever answers: New must
// fail after BootTimeout with an error naming the VM and the phase, give
// its boot slot back and leave no process, namespace or run directory.
func TestVMBootTimeoutLeavesNothing(t *testing.T) {
	if why := vmPrereqs(); why != "" {
		testenv.Skip(t, why)
	}
	run := claimRun(t)
	ns := owner.NamespaceName(run, "mute")
	const timeout = 2 * time.Second
	_, usedBefore, _ := boots.state()
	t0 := time.Now()
	var lines []string
	_, err := New(context.Background(), Config{Name: "mute", Namespace: ns, Cmdline: "rdinit=/bin/sh", BootTimeout: timeout,
		Logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }})
	took := time.Since(t0)
	if err == nil {
		t.Fatal("a guest without an agent booted")
	}
	t.Logf("after %v: %v", took, err)
	if want := "vm mute: boot: the guest agent did not answer within 2s of boot time"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	if !errors.Is(err, errBootTimeout) {
		t.Errorf("error is not a boot timeout: %v", err)
	}
	testenv.Floor(t, "New's failure, after the boot timeout", took, timeout, 10*time.Millisecond)
	if !strings.Contains(strings.Join(lines, ""), "*** Booting VM mute\n") {
		t.Errorf("no progress line: %q", lines)
	}
	if _, used, _ := boots.state(); used != usedBefore {
		t.Errorf("boot slots in use: %d, %d before", used, usedBefore)
	}
	if _, err := os.Stat(netnsx.Path(ns)); err == nil {
		t.Errorf("namespace %s left behind", ns)
	}
	if _, err := os.Stat(RunBase + "/" + ns); err == nil {
		t.Errorf("run dir left behind")
	}
	if out, _ := exec.Command("pgrep", "-f", "hymn:mute").Output(); len(out) > 0 {
		t.Errorf("qemu left running: %s", out)
	}
}

// claimRun returns a run id claimed for the test's lifetime (see
// bootShared).
func claimRun(t *testing.T) string {
	run := owner.NewRunID()
	if err := owner.Claim(run); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := owner.Release(run); err != nil {
			t.Error(err)
		}
	})
	return run
}

// TestVMAttachDevice hot-plugs a ready-made device (as a passed-through VF
// would be; here a virtio NIC on a tap) and checks the guest names it.
func TestVMAttachDevice(t *testing.T) {
	n := bootShared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The unprivileged QEMU cannot make taps: hymn makes one it may open.
	if err := netnsx.Do(n.NsHandle(), func() error { _, err := n.newTap("devtap", 0); return err }); err != nil {
		t.Fatal(err)
	}
	if _, err := n.m.qmpRun(ctx, "netdev_add", map[string]any{"type": "tap", "id": "devnet", "ifname": "devtap", "script": "no", "downscript": "no"}); err != nil {
		t.Fatal(err)
	}
	mac, _ := net.ParseMAC("52:54:00:dd:00:01")
	dev := map[string]any{"driver": "virtio-net-pci", "id": "devnic", "netdev": "devnet", "mac": mac.String()}
	if err := n.AttachDevice(ctx, "vm1-dev0", dev, mac, netip.MustParsePrefix("10.79.0.1/24")); err != nil {
		t.Fatal(err)
	}
	out, err := n.Cmd(ctx, "ip -o addr show vm1-dev0")
	if err != nil || !strings.Contains(out, "10.79.0.1/24") {
		t.Fatalf("guest: %q %v", out, err)
	}
	if err := n.DetachDevice(ctx, "devnic"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _ := n.Cmd(ctx, "ip link show vm1-dev0 2>&1 >/dev/null | wc -l")
		if strings.TrimSpace(out) != "0" {
			break // gone: ip complains
		}
		if time.Now().After(deadline) {
			t.Fatal("device still in the guest after device_del")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := n.m.qmpRun(ctx, "netdev_del", map[string]any{"id": "devnet"}); err != nil {
		t.Error(err)
	}
	n.removeBridge(&guestIntf{tap: "devtap", bridge: "devtap"})
}

// hostFSProbe makes a directory every user may enter (the guest sees the
// host as an unprivileged user does) holding a dynamically linked C
// program built on the host and a file only root may read.
func hostFSProbe(t *testing.T) (dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "hymn-hostfs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "hello.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void) { puts(\"hello from the host\"); return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-O2", "-o", filepath.Join(dir, "hello"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	f, err := elf.Open(filepath.Join(dir, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	dynamic := false
	for _, p := range f.Progs {
		dynamic = dynamic || p.Type == elf.PT_INTERP
	}
	_ = f.Close() // read-only
	if !dynamic {
		t.Fatal("hello is not dynamically linked")
	}
	if err := os.WriteFile(filepath.Join(dir, "secret"), []byte("root-only-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestVMHostFSWorldOnly: by default the guest sees the host's file system
// read-only and only what every user may read (QEMU runs unprivileged), yet
// runs a program built on the host from the shared tree.
func TestVMHostFSWorldOnly(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "qemu-system-x86_64", "gcc")
	n := bootShared(t)
	ctx := context.Background()
	dir := hostFSProbe(t)
	out, err := n.Cmd(ctx, "/host"+dir+"/hello")
	if err != nil || out != "hello from the host\n" {
		t.Errorf("host-built program in the guest: %q %v", out, err)
	}
	for _, p := range []string{dir + "/secret", "/etc/shadow"} {
		out, _ = n.Cmd(ctx, "cat /host"+p+"; echo status=$?")
		if strings.Contains(out, "root-only-secret") || strings.Contains(out, "root:") || !strings.Contains(out, "Permission denied") || strings.Contains(out, "status=0") {
			t.Errorf("guest read root-only %s: %q", p, out)
		}
	}
	out, _ = n.Cmd(ctx, "touch /host"+dir+"/written; echo status=$?")
	if _, err := os.Stat(filepath.Join(dir, "written")); err == nil || strings.Contains(out, "status=0") {
		t.Errorf("guest wrote into the host file system: %q", out)
	}
	// The sockets QEMU serves are in a 0700 directory, themselves 0600.
	for path, mode := range map[string]os.FileMode{n.cfg.RunDir: 0o700, n.m.paths.QMP: 0o600, n.m.paths.Agent: 0o600, n.m.paths.Console: 0o600} {
		if st, err := os.Stat(path); err != nil || st.Mode().Perm() != mode {
			t.Errorf("%s: mode %v %v, want %v", path, st.Mode().Perm(), err, mode)
		}
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", n.Pid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Uid:") || strings.HasPrefix(line, "CapEff:") {
			t.Logf("qemu %s", line)
			if f := strings.Fields(line); f[0] == "Uid:" && f[1] == "0" || f[0] == "CapEff:" && strings.Trim(f[1], "0") != "" {
				t.Errorf("qemu runs privileged: %s", line)
			}
		}
	}
}

// TestVMShareHostRoot: share=root is the explicit, unsafe way back to a
// guest that reads what root reads.
func TestVMShareHostRoot(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "qemu-system-x86_64", "gcc")
	if why := vmPrereqs(); why != "" {
		testenv.Skip(t, why)
	}
	if testing.Short() {
		t.Skip("boots a second VM")
	}
	dir := hostFSProbe(t)
	run := claimRun(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := New(ctx, Config{Name: "r1", Namespace: owner.NamespaceName(run, "r1"), ShareHostRoot: true, BootTimeout: testBootTimeout})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := n.Delete(); err != nil {
			t.Error(err)
		}
		if left := leftovers(n); left != "" {
			t.Errorf("left behind: %s", left)
		}
	}()
	out, err := n.Cmd(ctx, "cat /host"+dir+"/secret")
	if err != nil || out != "root-only-secret\n" {
		t.Errorf("share=root guest cannot read the root-only file: %q %v", out, err)
	}
}
