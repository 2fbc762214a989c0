package sriov

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// SysFS reads and writes the SR-IOV parts of sysfs under Root. The zero
// value uses the real /sys and /dev.
type SysFS struct {
	Root    string // sysfs mount point; "" means /sys
	DevRoot string // device directory for the vfio check; "" means /dev
}

// PF is a physical function: a network port that can spawn VFs.
type PF struct {
	Name     string `json:"name"`      // netdev name, e.g. enp33s0f0
	PCI      string `json:"pci"`       // PCI address, e.g. 0000:21:00.0
	Driver   string `json:"driver"`    // e.g. i40e
	TotalVFs int    `json:"total_vfs"` // sriov_totalvfs
	NumVFs   int    `json:"num_vfs"`   // sriov_numvfs
	VFs      []VF   `json:"vfs"`
}

// VF is a virtual function of a PF.
type VF struct {
	PF     string `json:"pf"`
	Index  int    `json:"index"`            // virtfn<Index>
	PCI    string `json:"pci"`              // PCI address of the VF
	Netdev string `json:"netdev,omitempty"` // "" when bound to vfio-pci or no driver
	Driver string `json:"driver,omitempty"` // iavf, vfio-pci, ...
}

func (s SysFS) root() string {
	if s.Root == "" {
		return "/sys"
	}
	return s.Root
}

func (s SysFS) devRoot() string {
	if s.DevRoot == "" {
		return "/dev"
	}
	return s.DevRoot
}

func (s SysFS) deviceDir(pf string) string {
	return filepath.Join(s.root(), "class", "net", pf, "device")
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// linkBase returns the last element of a symlink's target ("" if path is
// not a readable link): PCI addresses and driver names are spelled that way
// in sysfs.
func linkBase(path string) string {
	t, err := os.Readlink(path)
	if err != nil {
		return ""
	}
	return filepath.Base(t)
}

// onlyEntry returns the single directory entry of dir (a device's net/
// directory holds its one netdev), or "".
func onlyEntry(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		return ""
	}
	return entries[0].Name()
}

// PFs lists every SR-IOV capable network port (one with sriov_totalvfs),
// sorted by name. A machine without any returns an empty list, not an
// error.
func (s SysFS) PFs() ([]PF, error) {
	entries, err := os.ReadDir(filepath.Join(s.root(), "class", "net"))
	if err != nil {
		return nil, fmt.Errorf("listing network interfaces: %w", err)
	}
	var out []PF
	for _, e := range entries {
		pf, err := s.PF(e.Name())
		if errors.Is(err, ErrNotSRIOV) || errors.Is(err, ErrUnknownPF) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, pf)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// PF describes one PF and its VFs.
func (s SysFS) PF(name string) (PF, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return PF{}, fmt.Errorf("%w: %q", ErrUnknownPF, name)
	}
	dev := s.deviceDir(name)
	if _, err := os.Stat(filepath.Join(s.root(), "class", "net", name)); err != nil {
		return PF{}, fmt.Errorf("%w: %s", ErrUnknownPF, name)
	}
	total, err := readInt(filepath.Join(dev, "sriov_totalvfs"))
	if errors.Is(err, os.ErrNotExist) {
		return PF{}, fmt.Errorf("%s: %w", name, ErrNotSRIOV)
	}
	if err != nil {
		return PF{}, fmt.Errorf("%s: %w", name, err)
	}
	num, err := readInt(filepath.Join(dev, "sriov_numvfs"))
	if err != nil {
		return PF{}, fmt.Errorf("%s: %w", name, err)
	}
	pf := PF{Name: name, PCI: linkBase(dev), Driver: linkBase(filepath.Join(dev, "driver")), TotalVFs: total, NumVFs: num}
	if pf.PCI == "" {
		pf.PCI = filepath.Base(dev)
	}
	for i := 0; i < num; i++ {
		fn := filepath.Join(dev, "virtfn"+strconv.Itoa(i))
		addr := linkBase(fn)
		if addr == "" {
			// The kernel creates virtfn links as it probes VFs; one that is
			// missing is a VF that does not exist (yet).
			continue
		}
		pf.VFs = append(pf.VFs, VF{
			PF: name, Index: i, PCI: addr,
			Netdev: onlyEntry(filepath.Join(fn, "net")),
			Driver: linkBase(filepath.Join(fn, "driver")),
		})
	}
	return pf, nil
}

// VF returns one VF of a PF.
func (s SysFS) VF(pf string, index int) (VF, error) {
	p, err := s.PF(pf)
	if err != nil {
		return VF{}, err
	}
	for _, vf := range p.VFs {
		if vf.Index == index {
			return vf, nil
		}
	}
	return VF{}, fmt.Errorf("%s: no VF %d (%d enabled)", pf, index, p.NumVFs)
}

// EnableVFs sets the number of VFs of a PF. The kernel refuses to change a
// non-zero count to another non-zero count, so the count goes through 0
// first; asking for the current count does nothing, so VFs in use are not
// destroyed by a repeated setup.
func (s SysFS) EnableVFs(pf string, n int) error {
	p, err := s.PF(pf)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%s: %d VFs: the count cannot be negative", pf, n)
	}
	if n > p.TotalVFs {
		return fmt.Errorf("%s: %d VFs asked for, sriov_totalvfs is %d: %w", pf, n, p.TotalVFs, ErrTooManyVFs)
	}
	if n == p.NumVFs {
		return nil
	}
	path := filepath.Join(s.deviceDir(pf), "sriov_numvfs")
	if p.NumVFs != 0 && n != 0 {
		if err := os.WriteFile(path, []byte("0"), 0o644); err != nil {
			return fmt.Errorf("%s: disabling VFs: %w", pf, err)
		}
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(n)), 0o644); err != nil {
		return fmt.Errorf("%s: enabling %d VFs: %w", pf, n, err)
	}
	return nil
}

// VFIOAvailable reports whether VFs can be handed to vfio-pci here: the
// kernel must offer /dev/vfio (no IOMMU group, no VFIO).
func (s SysFS) VFIOAvailable() error {
	if _, err := os.Stat(filepath.Join(s.devRoot(), "vfio")); err != nil {
		return fmt.Errorf("%w (no %s/vfio: the kernel lacks VFIO or the IOMMU is off)", ErrVFIOUnavailable, s.devRoot())
	}
	return nil
}

func (s SysFS) pciDir(addr string) string {
	return filepath.Join(s.root(), "bus", "pci", "devices", addr)
}

// BindVFIO binds a VF (by PCI address) to vfio-pci, for DPDK or VM
// passthrough, and returns the driver it had, for UnbindVFIO. It uses
// driver_override rather than new_id so that no other device with the
// same vendor/device id is captured by vfio-pci.
func (s SysFS) BindVFIO(pci string) (previous string, err error) {
	if err := s.VFIOAvailable(); err != nil {
		return "", err
	}
	return s.rebind(pci, "vfio-pci")
}

// UnbindVFIO gives a VF back to a kernel driver (driver "" lets the
// kernel choose, which for a VF is its usual netdev driver).
func (s SysFS) UnbindVFIO(pci, driver string) error {
	_, err := s.rebind(pci, driver)
	return err
}

func (s SysFS) rebind(pci, driver string) (string, error) {
	dev := s.pciDir(pci)
	if _, err := os.Stat(dev); err != nil {
		return "", fmt.Errorf("PCI device %s: %w", pci, err)
	}
	prev := linkBase(filepath.Join(dev, "driver"))
	if prev == driver && driver != "" {
		return prev, nil
	}
	override := driver
	if override == "" {
		// Writing a newline clears the override.
		override = "\n"
	}
	if err := os.WriteFile(filepath.Join(dev, "driver_override"), []byte(override), 0o644); err != nil {
		return prev, fmt.Errorf("PCI device %s: driver_override: %w", pci, err)
	}
	if prev != "" {
		if err := os.WriteFile(filepath.Join(dev, "driver", "unbind"), []byte(pci), 0o200); err != nil {
			return prev, fmt.Errorf("PCI device %s: unbinding from %s: %w", pci, prev, err)
		}
	}
	if err := os.WriteFile(filepath.Join(s.root(), "bus", "pci", "drivers_probe"), []byte(pci), 0o200); err != nil {
		return prev, fmt.Errorf("PCI device %s: probing for %s: %w", pci, orKernel(driver), err)
	}
	return prev, nil
}

func orKernel(d string) string {
	if d == "" {
		return "the kernel's driver"
	}
	return d
}

// HasHardware reports whether any PF with VFs possible exists.
func (s SysFS) HasHardware() bool {
	pfs, err := s.PFs()
	if err != nil {
		return false
	}
	for _, p := range pfs {
		if p.TotalVFs > 0 {
			return true
		}
	}
	return false
}

// EnableVFsSafely is EnableVFs for shared machines: changing a non-zero
// VF count destroys every VF of the PF, so it is refused (ErrVFsInUse)
// while any of them carries a VLAN or MAC that someone set, unless force.
func (s SysFS) EnableVFsSafely(conf Configurator, pf string, n int, force bool) error {
	p, err := s.PF(pf)
	if err != nil {
		return err
	}
	if n > p.TotalVFs {
		return fmt.Errorf("%s: %d VFs asked for, sriov_totalvfs is %d: %w", pf, n, p.TotalVFs, ErrTooManyVFs)
	}
	if p.NumVFs != 0 && p.NumVFs != n && !force {
		var used []string
		for _, vf := range p.VFs {
			if st, err := conf.GetVF(pf, vf.Index); err == nil && st.Foreign() {
				used = append(used, strconv.Itoa(vf.Index))
			}
		}
		if len(used) > 0 {
			return fmt.Errorf("%s: changing %d VFs to %d would destroy VFs %s, configured by someone else (force to do it anyway): %w",
				pf, p.NumVFs, n, strings.Join(used, ", "), ErrVFsInUse)
		}
	}
	return s.EnableVFs(pf, n)
}
