package vm

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Accelerators.
const (
	AccelAuto = "auto" // KVM when /dev/kvm is usable, TCG otherwise
	AccelKVM  = "kvm"
	AccelTCG  = "tcg"
)

// Defaults.
const (
	DefaultMemory  = "256M"
	DefaultMachine = "pc"
	// q35 has no hot-plug slots of its own: this many PCIe root ports are
	// created at boot, one per NIC that can be hot-plugged.
	q35RootPorts = 16
)

// Config describes a VM node. The fields with a topology parameter of the
// same name (see ParseParams) follow CIMininet's VMHost.
type Config struct {
	Name      string // node name (h1)
	Namespace string // helper namespace, created by New (owner.NamespaceName(run, name))

	CPUs    int    // vCPUs; 0 means 1
	Memory  string // QEMU -m size: 512M, 4G; "" means DefaultMemory
	Kernel  string // "" means the built boot image (BuildImage)
	Initrd  string // used with Kernel; ignored when Kernel is ""
	Image   string // optional disk image (raw, qcow2 or squashfs), attached as virtio-blk
	Cmdline string // extra kernel command line
	Machine string // pc (default) or q35
	CPUPin  []int  // host core per vCPU
	Accel   string // auto (default), kvm or tcg
	// HostFS is the host directory shared read-only with the guest over
	// virtio-9p and mounted at /host, whose programs and libraries the
	// guest then runs (iperf3, tcpdump...), as a namespace node would: ""
	// means "/", "none" shares nothing. The guest sees it with the rights
	// of the unprivileged user QEMU runs as: only what every user of the
	// host may read (no /etc/shadow, no 0600 keys, no /root).
	HostFS string
	// ShareHostRoot runs QEMU as root instead, so the guest reads every
	// file of HostFS that root may read (/etc/shadow, private keys): only
	// for trusted guests. Parameter share=root (default share=world).
	ShareHostRoot bool
	// AllowDevices lets Image be a block device (parameter
	// allow_device=on); by default it must be a regular file.
	AllowDevices bool
	// AllowMachineProps lets Machine carry QEMU machine properties after
	// the type ("q35,kernel-irqchip=split"; parameter
	// allow_machine_props=on); by default it is a bare machine type.
	AllowMachineProps bool
	// QEMUUser is the user and group id QEMU runs as (unless
	// ShareHostRoot); 0 picks one per VM in [QEMUUserBase,
	// QEMUUserBase+65536), ids no account should own.
	QEMUUser uint32
	// Offload lets hot-plugged NICs hand partially checksummed and TSO
	// frames to the host (fast, but hymn's user-space link emulator would
	// forward them with bad checksums, see platform notes); off by default,
	// so the guest sends finished frames. Parameter offload=on.
	Offload bool

	// CacheDir holds built boot images; "" means DefaultCacheDir(). It
	// must belong to the user running hymn and not be writable by others.
	CacheDir string
	// RunDir holds the QMP and agent sockets and the console log; "" means
	// /run/hymn/vm/<Namespace>. New creates it (mode 0700) and fails if it
	// exists; Close removes it.
	RunDir string
	// BootTimeout bounds the wait for the agent; 0 means 60 s. It counts
	// from QEMU's start, after the VM got its boot slot (see
	// SetBootConcurrency), and leaves out the time the host kept QEMU
	// waiting for a CPU, so a TCG guest starved by other work on a busy
	// host is not failed for time it never had. The wall clock is bounded
	// all the same, at ten times BootTimeout.
	BootTimeout time.Duration
	// QEMU is the emulator binary; "" means qemu-system-x86_64 on PATH.
	QEMU string

	// Logf receives progress lines ("*** VM h1 ready in 6.4 s") and the
	// TCG warning; nil discards them.
	Logf func(format string, args ...any)
}

// RunBase is where VM nodes keep their sockets and console logs, one
// directory per helper namespace, so `hymn clean` can find what a killed
// run left (see RemoveRunDirs).
const RunBase = "/run/hymn/vm"

// ParseParams applies a node's topology parameters (as Mininet passes them
// to addHost) to cfg. Unknown keys are ignored, as CIMininet relies on one
// script driving both Host and VMHost. Values are checked by Validate.
func ParseParams(cfg *Config, params map[string]string) error {
	if err := parseParams(cfg, params); err != nil {
		if cfg.Name != "" {
			return fmt.Errorf("vm %s: %w", cfg.Name, err)
		}
		return err
	}
	return nil
}

func parseParams(cfg *Config, params map[string]string) error {
	for k, v := range params {
		v = strings.TrimSpace(v)
		switch k {
		case "cpus":
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%w: cpus=%q: not a number", ErrBadParam, v)
			}
			if n < 1 {
				return fmt.Errorf("%w: cpus=%d: a VM needs at least 1 vCPU", ErrBadParam, n)
			}
			if n > MaxCPUs {
				return fmt.Errorf("%w: cpus=%d: at most %d vCPUs", ErrBadParam, n, MaxCPUs)
			}
			cfg.CPUs = n
		case "memory", "mem":
			cfg.Memory = v
		case "kernel":
			cfg.Kernel = v
		case "initrd":
			cfg.Initrd = v
		case "image":
			cfg.Image = v
		case "cmdline":
			cfg.Cmdline = v
		case "machine":
			cfg.Machine = v
		case "accel":
			cfg.Accel = v
		case "hostfs":
			cfg.HostFS = v
		case "share":
			switch v {
			case "world":
				cfg.ShareHostRoot = false
			case "root":
				cfg.ShareHostRoot = true
			default:
				return fmt.Errorf("%w: share=%q: use world (what every user may read) or root (everything root may read: unsafe)", ErrBadParam, v)
			}
		case "offload", "allow_device", "allow_machine_props":
			on, err := parseOnOff(k, v)
			if err != nil {
				return err
			}
			switch k {
			case "offload":
				cfg.Offload = on
			case "allow_device":
				cfg.AllowDevices = on
			default:
				cfg.AllowMachineProps = on
			}
		case "cpupin":
			pins, err := parseCPUList(v)
			if err != nil {
				return fmt.Errorf("%w: cpupin=%q: %v", ErrBadParam, v, err)
			}
			cfg.CPUPin = pins
		}
	}
	return nil
}

// Bounds of VM parameters, checked while parsing so no value makes hymn
// loop or allocate in proportion to it.
const (
	MaxCPUs = 255  // vCPUs of one VM (QEMU's pc machine without x2APIC)
	MaxCore = 8191 // highest host core number a cpupin list may name (the kernel's NR_CPUS at most)
	// MaxMemoryMiB bounds memory= (16 TiB); the host's own memory is
	// checked when the VM starts.
	MaxMemoryMiB = 16 << 20
)

// parseCPUList reads "24,25", "[24, 25]" (Python's list as Mininet files
// write it) or "24-27". Core numbers are at most MaxCore and the list names
// at most MaxCPUs cores (one per vCPU).
func parseCPUList(s string) ([]int, error) {
	s = strings.Trim(strings.TrimSpace(s), "[]()")
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		lo, hi, isRange := strings.Cut(f, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q is not a core number", f)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a core range", f)
			}
		}
		if b > MaxCore {
			return nil, fmt.Errorf("core %d is above %d", b, MaxCore)
		}
		if len(out)+(b-a+1) > MaxCPUs {
			return nil, fmt.Errorf("more than %d cores (one per vCPU, at most %d vCPUs)", MaxCPUs, MaxCPUs)
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cores")
	}
	return out, nil
}

// MemoryMiB returns a memory= size in MiB ("" is DefaultMemory), as
// Validate checks it.
func MemoryMiB(s string) (int64, error) { return parseMemory(s) }

// parseMemory checks a QEMU -m size and returns it in MiB. QEMU reads a
// bare number as MiB and accepts the suffixes K, M, G, T.
func parseMemory(s string) (int64, error) {
	if s == "" {
		s = DefaultMemory
	}
	num, unit := s, "M"
	if t := strings.TrimRight(s, "bB"); len(t) < len(s) && len(t) > 0 && (t[len(t)-1] < '0' || t[len(t)-1] > '9') {
		num = t // "2GB" reads as "2G"
	}
	if last := num[len(num)-1]; last < '0' || last > '9' {
		num, unit = num[:len(num)-1], strings.ToUpper(num[len(num)-1:])
	}
	n, err := strconv.ParseFloat(num, 64)
	if err != nil || !(n > 0) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("%w: memory=%q: not a size (use e.g. 512M or 4G)", ErrBadParam, s)
	}
	var mib float64
	switch unit {
	case "K":
		mib = n / 1024
	case "M":
		mib = n
	case "G":
		mib = n * 1024
	case "T":
		mib = n * 1024 * 1024
	default:
		return 0, fmt.Errorf("%w: memory=%q: unknown unit %q (use K, M, G or T)", ErrBadParam, s, unit)
	}
	if mib < 64 {
		return 0, fmt.Errorf("%w: memory=%q: at least 64M is needed to boot", ErrBadParam, s)
	}
	if mib > MaxMemoryMiB {
		return 0, fmt.Errorf("%w: memory=%q: at most 16T", ErrBadParam, s)
	}
	return int64(mib), nil
}

// kvmUsable reports whether KVM can run VMs: /dev/kvm opens and the CPU
// advertises hardware virtualisation. The second check matters in nested
// setups (a Firecracker VM, say) that expose a /dev/kvm whose guests then
// fail on MSRs or hang without a single line of output.
func kvmUsable() bool {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	_ = f.Close() // only opened to see that it opens
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(info), "\n") {
		if strings.HasPrefix(line, "flags") {
			for _, f := range strings.Fields(line) {
				if f == "vmx" || f == "svm" {
					return true
				}
			}
			return false
		}
	}
	return false
}

// hostCPUs returns the cores this process may run on (and so pin to).
func hostCPUs() map[int]bool {
	var set unix.CPUSet
	out := map[int]bool{}
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return out
	}
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			out[c] = true
		}
	}
	return out
}

// resolved is a validated Config with the defaults filled in.
type resolved struct {
	Config
	memMiB int64
	accel  string // kvm or tcg
	q35    bool   // the machine is a q35 (PCIe root ports for hot-plug)
	uid    uint32 // QEMU's user and group; 0 with ShareHostRoot (New picks one otherwise)
}

var tcgWarnOnce sync.Once

// Validate checks every parameter before anything is created, so a bad
// topology fails with one clear error and leaves nothing running.
func (c *Config) Validate() error {
	_, err := c.resolve()
	return err
}

func (c *Config) resolve() (*resolved, error) {
	r := &resolved{Config: *c}
	wrap := func(err error) error {
		if c.Name != "" {
			return fmt.Errorf("vm %s: %w", c.Name, err)
		}
		return err
	}
	if r.CPUs == 0 {
		r.CPUs = 1
	}
	if r.CPUs < 0 {
		return nil, wrap(fmt.Errorf("%w: cpus=%d: a VM needs at least 1 vCPU", ErrBadParam, r.CPUs))
	}
	if r.CPUs > MaxCPUs {
		return nil, wrap(fmt.Errorf("%w: cpus=%d: at most %d vCPUs", ErrBadParam, r.CPUs, MaxCPUs))
	}
	if n, err := parseMemory(r.Memory); err != nil {
		return nil, wrap(err)
	} else {
		r.memMiB = n
	}
	if r.Memory == "" {
		r.Memory = DefaultMemory
	}
	if r.Machine == "" {
		r.Machine = DefaultMachine
	}
	q35, err := checkMachine(r.Machine, r.AllowMachineProps)
	if err != nil {
		return nil, wrap(err)
	}
	r.q35 = q35
	for _, f := range []struct{ name, path string }{{"kernel", r.Kernel}, {"initrd", r.Initrd}} {
		if f.path != "" {
			if err := checkBootFile(f.name, f.path, r.ShareHostRoot); err != nil {
				return nil, wrap(err)
			}
		}
	}
	if r.Image != "" {
		if err := checkImage(r.Image, r.AllowDevices); err != nil {
			return nil, wrap(err)
		}
	}
	if !r.ShareHostRoot {
		r.uid = r.QEMUUser // 0: New picks one
	}
	if r.HostFS == "" {
		r.HostFS = "/"
	}
	if r.HostFS != "none" {
		if st, err := os.Stat(r.HostFS); err != nil || !st.IsDir() {
			return nil, wrap(fmt.Errorf("%w: hostfs=%q: not a directory (use none to share nothing)", ErrBadParam, r.HostFS))
		}
	}
	if r.Initrd != "" && r.Kernel == "" {
		return nil, wrap(fmt.Errorf("%w: initrd=%q given without kernel", ErrBadParam, r.Initrd))
	}
	if len(r.CPUPin) > 0 {
		if len(r.CPUPin) != r.CPUs {
			return nil, wrap(fmt.Errorf("%w: cpupin=%v names %d cores for %d vCPUs (one core per vCPU)", ErrBadParam, r.CPUPin, len(r.CPUPin), r.CPUs))
		}
		have := hostCPUs()
		for _, core := range r.CPUPin {
			if !have[core] {
				return nil, wrap(fmt.Errorf("%w: cpupin=%v: core %d does not exist here (usable cores: %s)", ErrBadParam, r.CPUPin, core, cpuListString(have)))
			}
		}
	}
	switch r.Accel {
	case "", AccelAuto:
		if kvmUsable() {
			r.accel = AccelKVM
		} else {
			r.accel = AccelTCG
		}
	case AccelKVM:
		if !kvmUsable() {
			return nil, wrap(fmt.Errorf("%w: accel=kvm, but KVM is not usable here (/dev/kvm missing or the CPU has no vmx/svm); use accel=tcg or leave accel unset", ErrNoKVM))
		}
		r.accel = AccelKVM
	case AccelTCG:
		r.accel = AccelTCG
	default:
		return nil, wrap(fmt.Errorf("%w: accel=%q: use auto, kvm or tcg", ErrBadParam, r.Accel))
	}
	if r.RunDir == "" {
		if r.Namespace == "" {
			return nil, wrap(errors.New("no helper namespace name"))
		}
		r.RunDir = filepath.Join(RunBase, r.Namespace)
	}
	if r.BootTimeout <= 0 {
		r.BootTimeout = 60 * time.Second
	}
	if r.QEMU == "" {
		r.QEMU = "qemu-system-x86_64"
	}
	return r, nil
}

func cpuListString(set map[int]bool) string {
	var parts []string
	for c := 0; c < 4096; c++ {
		if set[c] {
			parts = append(parts, strconv.Itoa(c))
		}
	}
	return strings.Join(parts, ",")
}
