package vm

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func TestParseParamsAndValidate(t *testing.T) {
	bad := []struct {
		params map[string]string
		want   string // the parameter the error must name
	}{
		{map[string]string{"memory": "4X"}, "memory"},
		{map[string]string{"memory": "lots"}, "memory"},
		{map[string]string{"memory": "1M"}, "memory"},
		{map[string]string{"cpus": "0"}, "cpus"},
		{map[string]string{"cpus": "two"}, "cpus"},
		{map[string]string{"cpupin": "[100000]"}, "cpupin"},
		{map[string]string{"cpus": "2", "cpupin": "[0]"}, "cpupin"},
		{map[string]string{"cpupin": "a,b"}, "cpupin"},
		{map[string]string{"kernel": "/no/such/vmlinuz"}, "kernel"},
		{map[string]string{"kernel": os.Args[0], "initrd": "/no/such/initrd"}, "initrd"},
		{map[string]string{"image": "/no/such/image.squashfs"}, "image"},
		{map[string]string{"machine": "virt"}, "machine"},
		{map[string]string{"accel": "hvf"}, "accel"},
		{map[string]string{"hostfs": "/no/such/dir"}, "hostfs"},
		{map[string]string{"share": "all"}, "share"},
		{map[string]string{"allow_device": "maybe"}, "allow_device"},
		// Devices and special files as disk or boot files.
		{map[string]string{"image": "/dev/null"}, "image"},
		{map[string]string{"image": "/dev/zero"}, "image"},
		{map[string]string{"image": "/dev/zero", "allow_device": "on"}, "image"},
		{map[string]string{"image": "/"}, "image"},
		{map[string]string{"kernel": "/dev/zero"}, "kernel"},
		// Machine types and properties.
		{map[string]string{"machine": "microvm"}, "machine"},
		{map[string]string{"machine": "pc-"}, "machine"},
		{map[string]string{"machine": "pc,memory-backend=mem0"}, "allow_machine_props"},
		{map[string]string{"machine": "q35,dumpdtb=/etc/passwd"}, "allow_machine_props"},
		{map[string]string{"machine": "q35,,x=1", "allow_machine_props": "on"}, "machine"},
		{map[string]string{"machine": "q35,x=a b", "allow_machine_props": "on"}, "machine"},
	}
	for _, c := range bad {
		cfg := Config{Name: "h1", Namespace: "hymn-abcdef-h1"}
		err := ParseParams(&cfg, c.params)
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil {
			t.Errorf("%v: no error", c.params)
			continue
		}
		if !errors.Is(err, ErrBadParam) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "vm h1: ") && !strings.HasPrefix(err.Error(), "invalid VM parameter") {
			t.Errorf("%v: error %q does not name %s", c.params, err, c.want)
		}
	}

	cfg := Config{Name: "h1", Namespace: "hymn-abcdef-h1"}
	err := ParseParams(&cfg, map[string]string{"cpus": "2", "memory": "1G", "cpupin": "[0, 0]", "cmdline": "x=1", "stp": "1", "unknown": "ignored"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CPUs != 2 || cfg.Memory != "1G" || !slices.Equal(cfg.CPUPin, []int{0, 0}) || cfg.Cmdline != "x=1" {
		t.Fatalf("parsed %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestAccelKVMDemanded(t *testing.T) {
	cfg := Config{Name: "h1", Namespace: "n", Accel: "kvm"}
	err := cfg.Validate()
	if kvmUsable() {
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	if !errors.Is(err, ErrNoKVM) || !strings.Contains(err.Error(), "accel=kvm") {
		t.Fatalf("accel=kvm without KVM: %v", err)
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{"[24, 25]": {24, 25}, "3": {3}, "0-2,5": {0, 1, 2, 5}, "(1,2)": {1, 2}} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
}

func TestParseMemory(t *testing.T) {
	for in, want := range map[string]int64{"": 256, "512": 512, "512M": 512, "4G": 4096, "4g": 4096, "2GB": 2048, "1.5G": 1536, "131072K": 128} {
		got, err := parseMemory(in)
		if err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
}

func argValue(args []string, flag string) []string {
	var out []string
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			out = append(out, args[i+1])
		}
	}
	return out
}

func TestQEMUArgs(t *testing.T) {
	cfg := Config{Name: "h1", Namespace: "hymn-abcdef-h1", CPUs: 2, Memory: "1G", Cmdline: "idle=poll", Accel: "tcg"}
	r, err := cfg.resolve()
	if err != nil {
		t.Fatal(err)
	}
	args := qemuArgs(r, true, true)
	check := func(flag string, want ...string) {
		t.Helper()
		if got := argValue(args, flag); !slices.Equal(got, want) {
			t.Errorf("%s: got %q, want %q", flag, got, want)
		}
	}
	check("-accel", "tcg")
	check("-smp", "2")
	check("-m", "1024M")
	check("-machine", "pc")
	check("-kernel", "/dev/fd/6")
	check("-initrd", "/dev/fd/7")
	check("-append", baseCmdline+" hymn.name=h1 idle=poll")
	check("-chardev", "socket,id=qmp,fd=3,server=on,wait=off", "socket,id=agent,fd=4,server=on,wait=off")
	check("-mon", "chardev=qmp,mode=control")
	check("-add-fd", "fd=5,set=1")
	check("-serial", "file:/dev/fdset/1")
	check("-fsdev", "local,id=hostfs,path=/,security_model=none,readonly=on")
	seen := map[uint32]bool{}
	for range 1000 {
		id := pickQEMUUser()
		if id <= QEMUUserBase || id > QEMUUserBase+0x10000 || seen[id] {
			t.Fatalf("QEMU user %#x outside the VM range or reused", id)
		}
		seen[id] = true
	}
	for id := range seen {
		releaseQEMUUser(id)
	}
	if !slices.Contains(args, "-nodefaults") || !slices.Contains(args, "-no-reboot") {
		t.Errorf("missing -nodefaults or -no-reboot: %q", args)
	}
	if devs := argValue(args, "-device"); !slices.Contains(devs, "virtserialport,chardev=agent,name=org.hymn.agent.0") {
		t.Errorf("no agent port: %q", devs)
	}
	if slices.Contains(args, "-cpu") {
		t.Errorf("TCG got a -cpu: %q", args)
	}

	// KVM gets the host CPU; q35 gets root ports for hot-plug; disks.
	r.accel = AccelKVM
	r.Machine, r.q35 = "q35", true
	r.Image = "/img/root.squashfs"
	args = qemuArgs(r, false, false)
	check("-cpu", "host")
	check("-add-fd", "fd=5,set=1", "fd=8,set=2")
	check("-drive", "file=/dev/fdset/2,if=virtio,format=raw,readonly=on")
	if slices.Contains(args, "-kernel") || slices.Contains(args, "-append") {
		t.Errorf("kernel args without a kernel: %q", args)
	}
	ports := 0
	for _, d := range argValue(args, "-device") {
		if strings.HasPrefix(d, "pcie-root-port,") {
			ports++
		}
	}
	if ports != q35RootPorts {
		t.Errorf("%d root ports, want %d", ports, q35RootPorts)
	}
	if got := driveSpec("/a,b/disk.qcow2", "/a,b/disk.qcow2"); got != "file=/a,,b/disk.qcow2,if=virtio,format=qcow2,snapshot=on" {
		t.Errorf("driveSpec: %s", got)
	}
}

func TestMachineTypes(t *testing.T) {
	for m, q35 := range map[string]bool{"pc": false, "q35": true, "pc-i440fx-7.2": false, "pc-q35-7.2": true} {
		got, err := checkMachine(m, false)
		if err != nil || got != q35 {
			t.Errorf("%s: q35=%v %v", m, got, err)
		}
	}
	if got, err := checkMachine("q35,kernel-irqchip=split", true); err != nil || !got {
		t.Errorf("q35 with a property, allowed: %v %v", got, err)
	}
	if _, err := checkMachine("q35,kernel-irqchip=split", false); err == nil || !strings.Contains(err.Error(), "allow_machine_props=on") {
		t.Errorf("q35 with a property, not allowed: %v", err)
	}
}

// TestImageDevices: block devices only with allow_device=on; character
// devices, FIFOs and directories never.
func TestImageDevices(t *testing.T) {
	var block string
	for _, p := range []string{"/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1"} {
		if st, err := os.Stat(p); err == nil && st.Mode()&os.ModeDevice != 0 && st.Mode()&os.ModeCharDevice == 0 {
			block = p
			break
		}
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := checkImage(fifo, true); err == nil {
		t.Errorf("FIFO accepted as image")
	}
	if block == "" {
		t.Log("no block device here to try")
		return
	}
	err := (&Config{Name: "h1", Namespace: "n", Image: block}).Validate()
	if err == nil || !strings.Contains(err.Error(), "allow_device=on") {
		t.Errorf("block device %s without allow_device: %v", block, err)
	}
	if err := (&Config{Name: "h1", Namespace: "n", Image: block, AllowDevices: true}).Validate(); err != nil {
		t.Errorf("block device %s with allow_device: %v", block, err)
	}
}

// TestBootFileReadableByQEMU: an unprivileged QEMU reopens kernel= through
// /dev/fd, so a file others cannot read is refused up front (and accepted
// with share=root, where QEMU is root).
func TestBootFileReadableByQEMU(t *testing.T) {
	k := filepath.Join(t.TempDir(), "vmlinuz")
	if err := os.WriteFile(k, []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := (&Config{Name: "h1", Namespace: "n", Kernel: k}).Validate()
	if !errors.Is(err, ErrBadParam) || !strings.Contains(err.Error(), "not readable by others") {
		t.Errorf("0600 kernel: %v", err)
	}
	if err := (&Config{Name: "h1", Namespace: "n", Kernel: k, ShareHostRoot: true}).Validate(); err != nil {
		t.Errorf("0600 kernel with share=root: %v", err)
	}
	cfg := Config{Name: "h1", Namespace: "n"}
	if err := ParseParams(&cfg, map[string]string{"share": "root", "allow_device": "on", "allow_machine_props": "yes"}); err != nil || !cfg.ShareHostRoot || !cfg.AllowDevices || !cfg.AllowMachineProps {
		t.Errorf("opt-in parameters: %+v %v", cfg, err)
	}
}

// TestRunDirPrivate: the socket directory is made 0700 and exclusively.
func TestRunDirPrivate(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "vm", "hymn-x-h1")
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	if err := makeRunDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if st, err := os.Stat(d); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v %v", d, st.Mode().Perm(), err)
		}
	}
	if err := makeRunDir(dir); err == nil {
		t.Errorf("an existing run directory was reused")
	}
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := makeRunDir(filepath.Join(open, "x")); err == nil || !strings.Contains(err.Error(), "writable by group or others") {
		t.Errorf("run directory in a world-writable parent: %v", err)
	}
	// The sockets QEMU gets are 0600.
	sock := filepath.Join(dir, "qmp.sock")
	f, err := listenFile(sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v %v", st.Mode().Perm(), err)
	}
}
