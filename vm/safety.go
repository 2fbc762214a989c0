package vm

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
)

func parseOnOff(key, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "on", "true", "yes":
		return true, nil
	case "0", "off", "false", "no":
		return false, nil
	}
	return false, fmt.Errorf("%w: %s=%q: use on or off", ErrBadParam, key, v)
}

// QEMUUserBase starts the range of ids VM processes run as by default.
const QEMUUserBase = 0x68790000

// machineTypes are the QEMU machine types hymn boots: PCI hot-plug of NICs
// needs pc (ACPI) or q35 (PCIe root ports). microvm has no hot-plug.
var machineType = regexp.MustCompile(`^(pc|q35|pc-i440fx-[0-9]+\.[0-9]+|pc-q35-[0-9]+\.[0-9]+)$`)

// machineProp is one key=value machine property, allowed with
// AllowMachineProps.
var machineProp = regexp.MustCompile(`^[a-z][a-z0-9_.-]*=[A-Za-z0-9_.:-]+$`)

// checkMachine accepts a known machine type, with properties only when
// allowed, and reports whether it is a q35.
func checkMachine(m string, allowProps bool) (q35 bool, err error) {
	base, props, hasProps := strings.Cut(m, ",")
	if !machineType.MatchString(base) {
		return false, fmt.Errorf("%w: machine=%q: use pc or q35 (or a versioned pc-i440fx-X.Y, pc-q35-X.Y)", ErrBadParam, m)
	}
	if hasProps {
		if !allowProps {
			return false, fmt.Errorf("%w: machine=%q: machine properties need allow_machine_props=on", ErrBadParam, m)
		}
		for _, p := range strings.Split(props, ",") {
			if !machineProp.MatchString(p) {
				return false, fmt.Errorf("%w: machine=%q: property %q is not key=value", ErrBadParam, m, p)
			}
		}
	}
	return base == "q35" || strings.HasPrefix(base, "pc-q35-"), nil
}

// checkBootFile accepts a regular file for kernel= or initrd=. Unless
// QEMU runs as root it reopens the file through /dev/fd, which needs the
// file itself (not its directories) readable by others.
func checkBootFile(name, path string, asRoot bool) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: %s=%q: %v", ErrBadParam, name, path, errors.Unwrap(err))
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s=%q: not a regular file", ErrBadParam, name, path)
	}
	if !asRoot && st.Mode().Perm()&0o004 == 0 {
		return fmt.Errorf("%w: %s=%q: not readable by others (mode %#o), which the unprivileged QEMU needs (chmod o+r, or share=root)", ErrBadParam, name, path, st.Mode().Perm())
	}
	return nil
}

// checkImage accepts a regular file, or a block device when allowed.
func checkImage(path string, allowDevices bool) error {
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%w: image=%q: %v", ErrBadParam, path, errors.Unwrap(err))
	}
	switch mode := st.Mode(); {
	case mode.IsRegular():
		return nil
	case mode&os.ModeDevice != 0 && mode&os.ModeCharDevice == 0:
		if !allowDevices {
			return fmt.Errorf("%w: image=%q: a block device (the guest would read the host's disk); set allow_device=on to mean it", ErrBadParam, path)
		}
		return nil
	default:
		return fmt.Errorf("%w: image=%q: not a regular file (%s)", ErrBadParam, path, mode.Type())
	}
}

// qemuUsers are the ids VMs of this process run as, so two of them never
// share one (a QEMU could otherwise signal or trace the other).
var qemuUsers = struct {
	sync.Mutex
	inUse map[uint32]bool
}{inUse: map[uint32]bool{}}

// pickQEMUUser returns a random id in (QEMUUserBase, QEMUUserBase+65536]
// that no other VM of this process uses; releaseQEMUUser frees it.
func pickQEMUUser() uint32 {
	qemuUsers.Lock()
	defer qemuUsers.Unlock()
	for {
		var b [2]byte
		rand.Read(b[:])
		id := QEMUUserBase + 1 + (uint32(b[0])<<8 | uint32(b[1]))
		if !qemuUsers.inUse[id] {
			qemuUsers.inUse[id] = true
			return id
		}
	}
}

func releaseQEMUUser(id uint32) {
	qemuUsers.Lock()
	delete(qemuUsers.inUse, id)
	qemuUsers.Unlock()
}

// checkPrivateDir accepts a directory (not a symlink) that belongs to the
// user running hymn and that neither its group nor others may write.
func checkPrivateDir(what, dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s %s: not a directory (%s)", what, dir, st.Mode().Type())
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%s %s: owned by uid %d, not by uid %d running hymn", what, dir, sys.Uid, os.Geteuid())
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s %s: writable by group or others (mode %#o)", what, dir, st.Mode().Perm())
	}
	return nil
}

// makePrivateDir creates dir and its missing parents with mode 0700 and
// checks that dir is private (checkPrivateDir), tightening it to 0700.
func makePrivateDir(what, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := checkPrivateDir(what, dir); err != nil {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// makeRunDir creates a VM's socket directory: mode 0700, exclusively (an
// existing one is an error, never reused), in a private parent.
func makeRunDir(dir string) error {
	if err := makePrivateDir("VM run directory", filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return fmt.Errorf("VM run directory: %w", err)
	}
	return os.Chmod(dir, 0o700) // the umask can only have cleared bits
}
