package vm

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	p := runPaths(r.RunDir)
	args := qemuArgs(r, "/k/vmlinuz", "/k/initrd", p)
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
	check("-kernel", "/k/vmlinuz")
	check("-initrd", "/k/initrd")
	check("-append", baseCmdline+" hymn.name=h1 idle=poll")
	check("-qmp", "unix:"+filepath.Join(RunBase, "hymn-abcdef-h1", "qmp.sock")+",server=on,wait=off")
	check("-serial", "file:"+filepath.Join(RunBase, "hymn-abcdef-h1", "console.log"))
	check("-fsdev", "local,id=hostfs,path=/,security_model=none,readonly=on")
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
	r.Machine = "q35"
	r.Image = "/img/root.squashfs"
	args = qemuArgs(r, "", "", p)
	check("-cpu", "host")
	check("-drive", "file=/img/root.squashfs,if=virtio,format=raw,readonly=on")
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
	if got := driveSpec("/a,b/disk.qcow2"); got != "file=/a,,b/disk.qcow2,if=virtio,format=qcow2,snapshot=on" {
		t.Errorf("driveSpec: %s", got)
	}
}
