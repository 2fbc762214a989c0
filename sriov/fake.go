package sriov

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// FakePF describes one PF of a fake sysfs tree.
type FakePF struct {
	Name     string
	TotalVFs int
	NumVFs   int
	// VFNames names the VF netdevs; missing entries default to
	// <Name>v<i>, as the kernel names VFs of predictable-named PFs.
	VFNames []string
}

// VFName returns the netdev name of VF i of a fake PF.
func (p FakePF) VFName(i int) string {
	if i < len(p.VFNames) && p.VFNames[i] != "" {
		return p.VFNames[i]
	}
	return p.Name + "v" + strconv.Itoa(i)
}

// FakePCI returns the PCI address the fake tree gives PF number pf
// (function 0 of its own bus) or, for vf ≥ 0, VF vf of it (eight
// functions per device from device 2 on, as X710 VFs are laid out).
func FakePCI(pf, vf int) string {
	bus := 0x21 + pf
	if vf < 0 {
		return fmt.Sprintf("0000:%02x:00.0", bus)
	}
	return fmt.Sprintf("0000:%02x:%02x.%d", bus, 2+vf/8, vf%8)
}

// WriteFakeTree writes a sysfs tree under root that SysFS{Root: root}
// reads like the real one: class/net entries that are symlinks into
// devices/, sriov_totalvfs/sriov_numvfs, virtfn<i> links to the VFs' PCI
// directories, driver links and bus/pci/devices. It is what the simulated
// NIC describes itself with, and what unit tests run on.
func WriteFakeTree(root string, pfs []FakePF) error {
	devs := filepath.Join(root, "devices", "pci0000:00")
	drivers := filepath.Join(root, "bus", "pci", "drivers")
	for _, d := range []string{devs, filepath.Join(root, "class", "net"), filepath.Join(root, "bus", "pci", "devices"),
		filepath.Join(drivers, "i40e"), filepath.Join(drivers, "iavf"), filepath.Join(drivers, "vfio-pci")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(root, "bus", "pci", "drivers_probe"), nil, 0o644); err != nil {
		return err
	}
	for pi, pf := range pfs {
		if pf.NumVFs > pf.TotalVFs {
			return fmt.Errorf("fake PF %s: %d VFs exceed sriov_totalvfs %d", pf.Name, pf.NumVFs, pf.TotalVFs)
		}
		addr := FakePCI(pi, -1)
		if err := writeFakeDevice(root, addr, "i40e", pf.Name); err != nil {
			return err
		}
		dev := filepath.Join(devs, addr)
		files := map[string]string{"sriov_totalvfs": strconv.Itoa(pf.TotalVFs), "sriov_numvfs": strconv.Itoa(pf.NumVFs)}
		for name, v := range files {
			if err := os.WriteFile(filepath.Join(dev, name), []byte(v+"\n"), 0o644); err != nil {
				return err
			}
		}
		for i := 0; i < pf.NumVFs; i++ {
			vaddr := FakePCI(pi, i)
			if err := writeFakeDevice(root, vaddr, "iavf", pf.VFName(i)); err != nil {
				return err
			}
			if err := os.Symlink("../"+vaddr, filepath.Join(dev, "virtfn"+strconv.Itoa(i))); err != nil {
				return err
			}
			if err := os.Symlink("../"+addr, filepath.Join(devs, vaddr, "physfn")); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFakeDevice makes devices/pci0000:00/<addr> with a driver link, a
// driver_override file and a net/<netdev> directory, and the class/net and
// bus/pci/devices links to it.
func writeFakeDevice(root, addr, driver, netdev string) error {
	dev := filepath.Join(root, "devices", "pci0000:00", addr)
	ndir := filepath.Join(dev, "net", netdev)
	if err := os.MkdirAll(ndir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dev, "driver_override"), []byte("(null)\n"), 0o644); err != nil {
		return err
	}
	links := [][2]string{
		{"../../../bus/pci/drivers/" + driver, filepath.Join(dev, "driver")},
		{"../../../" + addr, filepath.Join(ndir, "device")},
		{"../../devices/pci0000:00/" + addr + "/net/" + netdev, filepath.Join(root, "class", "net", netdev)},
		{"../../../devices/pci0000:00/" + addr, filepath.Join(root, "bus", "pci", "devices", addr)},
	}
	for _, l := range links {
		if err := os.Symlink(l[0], l[1]); err != nil {
			return err
		}
	}
	// An unbind file like the kernel's, so rebinding works on the tree.
	return os.WriteFile(filepath.Join(root, "bus", "pci", "drivers", driver, "unbind"), nil, 0o644)
}
