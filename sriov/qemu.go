package sriov

import "fmt"

// VFIODevice returns the QMP device_add arguments that pass a VF (bound to
// vfio-pci with SysFS.BindVFIO) through to a VM, hot-plugged into a PCIe
// root port (bus; "" lets QEMU choose), as CIMininet's VMHost does for
// HwPair links. id names the device for a later device_del.
func VFIODevice(pci, id, bus string) map[string]any {
	args := map[string]any{"driver": "vfio-pci", "host": pci, "id": id}
	if bus != "" {
		args["bus"] = bus
	}
	return args
}

// VFIODeviceArg is the same device as a -device command-line argument, for
// VFs present at boot.
func VFIODeviceArg(pci, id, bus string) string {
	s := fmt.Sprintf("vfio-pci,host=%s,id=%s", pci, id)
	if bus != "" {
		s += ",bus=" + bus
	}
	return s
}

// PassthroughVF prepares a VF for a VM: it checks that vfio exists (an
// error wrapping ErrVFIOUnavailable otherwise, before anything changes),
// binds the VF to vfio-pci and returns the device_add arguments and the
// driver to give the VF back to afterwards (UnbindVFIO).
func (s SysFS) PassthroughVF(vf VF, id, bus string) (qmp map[string]any, previous string, err error) {
	if err := s.VFIOAvailable(); err != nil {
		return nil, "", fmt.Errorf("passing %s vf %d (%s) through: %w", vf.PF, vf.Index, vf.PCI, err)
	}
	prev, err := s.BindVFIO(vf.PCI)
	if err != nil {
		return nil, prev, err
	}
	return VFIODevice(vf.PCI, id, bus), prev, nil
}
