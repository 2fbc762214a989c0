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
// net.ifnames=0 as CIMininet's guests use.
const baseCmdline = "console=ttyS0 quiet panic=-1 net.ifnames=0"

// qemuArgs builds the QEMU command line (without the program name). It is
// a pure function of the resolved config so it can be unit-tested.
func qemuArgs(r *resolved, kernel, initrd string, p paths) []string {
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
		"-serial", "file:" + p.Console,
		"-qmp", "unix:" + p.QMP + ",server=on,wait=off",
		"-chardev", "socket,id=agent,path=" + p.Agent + ",server=on,wait=off",
		"-device", "virtio-serial-pci,id=vser0",
		"-device", "virtserialport,chardev=agent,name=" + agent.PortName,
	}
	if r.accel == AccelKVM {
		args = append(args, "-cpu", "host")
	}
	if kernel != "" {
		args = append(args, "-kernel", kernel)
		if initrd != "" {
			args = append(args, "-initrd", initrd)
		}
		cmdline := baseCmdline + " hymn.name=" + r.Name
		if r.Cmdline != "" {
			cmdline += " " + r.Cmdline
		}
		args = append(args, "-append", cmdline)
	}
	if r.Image != "" {
		args = append(args, "-drive", driveSpec(r.Image))
	}
	if r.HostFS != "none" {
		args = append(args,
			"-fsdev", "local,id=hostfs,path="+strings.ReplaceAll(r.HostFS, ",", ",,")+",security_model=none,readonly=on",
			"-device", "virtio-9p-pci,fsdev=hostfs,mount_tag="+agent.HostFSTag)
	}
	if r.Machine == "q35" {
		for i := 1; i <= q35RootPorts; i++ {
			args = append(args, "-device", fmt.Sprintf("pcie-root-port,id=rp%d,bus=pcie.0,chassis=%d,slot=%d", i, i, i))
		}
	}
	return args
}

// driveSpec attaches a disk image. A squashfs is read-only by nature;
// other images get snapshot=on so VMs sharing one image never write to it.
func driveSpec(path string) string {
	esc := strings.ReplaceAll(path, ",", ",,") // QEMU's option escaping
	switch {
	case strings.HasSuffix(path, ".squashfs"):
		return "file=" + esc + ",if=virtio,format=raw,readonly=on"
	case strings.HasSuffix(path, ".qcow2"):
		return "file=" + esc + ",if=virtio,format=qcow2,snapshot=on"
	default:
		return "file=" + esc + ",if=virtio,format=raw,snapshot=on"
	}
}
