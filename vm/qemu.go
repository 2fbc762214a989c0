package vm

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/vm/agent"
)

// paths are the files of one running VM.
type paths struct {
	QMP, Agent, Console string
}

func runPaths(runDir string) paths {
	return paths{
		QMP:     filepath.Join(runDir, "qmp.sock"),
		Agent:   filepath.Join(runDir, "agent.sock"),
		Console: filepath.Join(runDir, "console.log"),
	}
}

// baseCmdline is what hymn's boot image needs: the serial console (the
// console log shows boot problems), no reboot loop on a panic, and
// net.ifnames=0 as CIMininet's guests use. no_timer_check skips the
// kernel's IO-APIC timer test, which a TCG guest on a loaded host fails
// ("Kernel panic - not syncing: IO-APIC + timer doesn't work!", seen here
// at load 28 on 2 cores).
const baseCmdline = "console=ttyS0 quiet panic=-1 net.ifnames=0 no_timer_check"

// QEMU gets every file it needs as an inherited descriptor, opened by hymn
// (root) before QEMU starts, so QEMU itself can run as an unprivileged
// user that could not open them: the QMP and agent sockets (listening, in
// a 0700 directory), the console log, the boot files (in a 0700 cache)
// and the disk image. These are their numbers in QEMU (ExtraFiles start
// at 3).
const (
	fdQMP     = 3
	fdAgent   = 4
	fdConsole = 5 // QEMU fd set 1
	fdKernel  = 6
	fdInitrd  = 7
	fdImage   = 8 // QEMU fd set 2

	fdsetConsole = 1
	fdsetImage   = 2
)

// qemuArgs builds the QEMU command line (without the program name). It is
// a pure function of the resolved config so it can be unit-tested.
// withKernel and withInitrd say whether fdKernel and fdInitrd are passed.
func qemuArgs(r *resolved, withKernel, withInitrd bool) []string {
	args := []string{
		"-name", "hymn:" + r.Name,
		"-machine", r.Machine,
		"-accel", r.accel,
		"-smp", strconv.Itoa(r.CPUs),
		"-m", strconv.FormatInt(r.memMiB, 10) + "M",
		// No default NIC, VGA, floppy or monitor: every device is explicit.
		"-nodefaults", "-no-user-config", "-display", "none",
		// A guest poweroff or panic ends QEMU instead of rebooting.
		"-no-reboot",
		"-add-fd", fmt.Sprintf("fd=%d,set=%d", fdConsole, fdsetConsole),
		"-serial", fmt.Sprintf("file:/dev/fdset/%d", fdsetConsole),
		"-chardev", fmt.Sprintf("socket,id=qmp,fd=%d,server=on,wait=off", fdQMP),
		"-mon", "chardev=qmp,mode=control",
		"-chardev", fmt.Sprintf("socket,id=agent,fd=%d,server=on,wait=off", fdAgent),
		"-device", "virtio-serial-pci,id=vser0",
		"-device", "virtserialport,chardev=agent,name=" + agent.PortName,
	}
	if r.accel == AccelKVM {
		args = append(args, "-cpu", "host")
	}
	if withKernel {
		// QEMU reopens /dev/fd/N, which reaches the inode without
		// searching the (0700) directories on its path.
		args = append(args, "-kernel", fmt.Sprintf("/dev/fd/%d", fdKernel))
		if withInitrd {
			args = append(args, "-initrd", fmt.Sprintf("/dev/fd/%d", fdInitrd))
		}
		cmdline := baseCmdline + " hymn.name=" + r.Name
		if r.Cmdline != "" {
			cmdline += " " + r.Cmdline
		}
		args = append(args, "-append", cmdline)
	}
	if r.Image != "" {
		args = append(args,
			"-add-fd", fmt.Sprintf("fd=%d,set=%d", fdImage, fdsetImage),
			"-drive", driveSpec(r.Image, fmt.Sprintf("/dev/fdset/%d", fdsetImage)))
	}
	if r.HostFS != "none" {
		// Read-only, and seen with QEMU's own rights: unless ShareHostRoot
		// made QEMU root, the guest reads only what every user may read.
		args = append(args,
			"-fsdev", "local,id=hostfs,path="+strings.ReplaceAll(r.HostFS, ",", ",,")+",security_model=none,readonly=on",
			"-device", "virtio-9p-pci,fsdev=hostfs,mount_tag="+agent.HostFSTag)
	}
	if r.q35 {
		for i := 1; i <= q35RootPorts; i++ {
			args = append(args, "-device", fmt.Sprintf("pcie-root-port,id=rp%d,bus=pcie.0,chassis=%d,slot=%d", i, i, i))
		}
	}
	return args
}

// driveSpec attaches the disk image path (its name chooses the format),
// which QEMU opens as file. A squashfs is read-only by nature; other
// images get snapshot=on so VMs sharing one image never write to it, and
// so QEMU only ever reads the image (the descriptor hymn passes is
// read-only).
func driveSpec(path, file string) string {
	esc := strings.ReplaceAll(file, ",", ",,") // QEMU's option escaping
	switch {
	case strings.HasSuffix(path, ".squashfs"):
		return "file=" + esc + ",if=virtio,format=raw,readonly=on"
	case strings.HasSuffix(path, ".qcow2"):
		return "file=" + esc + ",if=virtio,format=qcow2,snapshot=on"
	default:
		return "file=" + esc + ",if=virtio,format=raw,snapshot=on"
	}
}
