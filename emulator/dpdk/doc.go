// Package dpdk is hymn's thin cgo layer over DPDK (Debian's libdpdk,
// through pkg-config), giving the link emulator a Port on DPDK ethdevs:
// SR-IOV VFs bound to vfio-pci (by PCI address) or virtual devices such as
// net_ring, net_null and net_af_packet.
//
// It is built only with the build tag dpdk (go test -tags dpdk ./...),
// because it needs cgo and libdpdk-dev; without the tag every entry point
// returns ErrNotBuilt, so a caller asking for DPDK gets a clear error.
//
// DPDK's environment (EAL) is initialised once per process, without
// hugepages (--no-huge) unless asked, without PCI scanning (--no-pci; the
// machine's own NIC must stay with the kernel) and unpinned (--lcores
// spanning every CPU), so it does not fight the Go scheduler. One process
// serves many ports: virtual devices are created after the EAL starts
// (rte_vdev_init). EAL writes /var/run/dpdk/<prefix>; Cleanup removes it,
// and RemoveStale removes what crashed processes left. Config.Args is the
// EAL command line as a pure function of the Config, so the hardware case
// is tested without hardware: there Config.PCI replaces --no-pci with an
// allow list (-a) of VFs bound to vfio-pci, and AttachPCI/DetachPCI
// hot-plug further VFs; a process whose EAL started with --no-pci cannot
// attach PCI devices. Devices lists the ethdevs that exist, for leak
// checks.
//
// Package hymn uses it for emulated SR-IOV links with emulator=dpdk
// (dpdklink.go): net_af_packet devices on the simulated NIC's VF netdevs,
// or the VFs' own poll-mode drivers on hardware; the EAL is started once
// per process by the first such link and ended by hymn.CleanupDPDK.
//
// The burst functions of DPDK are static inline, which cgo cannot call;
// small C wrappers in the preamble do one cgo call per burst and copy
// frames between mbufs and a C staging area, so no Go pointer is ever
// passed to C.
package dpdk
