package dpdk

import (
	"slices"
	"strings"
	"testing"
)

// The EAL arguments for the two cases hymn uses: virtual devices only
// (the simulated NIC's VFs through net_af_packet) and hardware VFs bound
// to vfio-pci, where PCI is an allow list so no other device is probed.
func TestArgs(t *testing.T) {
	vdev := Config{}.Args(2)
	want := []string{"-m", "256", "--no-telemetry", "--file-prefix=" + FilePrefix(), "--lcores=0@(0-1)", "--log-level=4", "--no-pci", "--no-huge"}
	if !slices.Equal(vdev, want) {
		t.Errorf("virtual devices: %q\nwant %q", vdev, want)
	}
	hw := Config{PCI: []string{"0000:21:02.0", "0000:21:0a.1"}, Hugepages: true, HugeDir: "/dev/hugepages", MemoryMB: 512}.Args(8)
	want = []string{"-m", "512", "--no-telemetry", "--file-prefix=" + FilePrefix(), "--lcores=0@(0-7)", "--log-level=4",
		"-a", "0000:21:02.0", "-a", "0000:21:0a.1", "--huge-dir=/dev/hugepages"}
	if !slices.Equal(hw, want) {
		t.Errorf("hardware: %q\nwant %q", hw, want)
	}
	if strings.Contains(strings.Join(hw, " "), "--no-pci") {
		t.Error("hardware arguments disable PCI")
	}
}
