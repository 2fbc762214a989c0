// Package sriov gives hymn SR-IOV links: a topology link realised as two
// virtual functions (VFs) on two physical-function (PF) ports that are
// cabled to each other, both VFs set to the same VLAN id, so each VF pair
// is a private point-to-point wire (CIMininet's HwPair).
//
// The package has five parts:
//
//   - SysFS discovers PFs and VFs from sysfs (root configurable, so tests
//     run on a fake tree), enables VFs and binds VFs to vfio-pci.
//   - Configurator reads and writes per-VF settings (VLAN, MAC, spoofchk,
//     trust, link state). NetlinkConfigurator talks to the PF driver; a
//     MemConfigurator keeps them in memory for tests and the simulated NIC.
//   - Inventory says which PF ports are cabled together and which VLAN ids
//     hymn may use (a YAML file, or flags).
//   - Allocator hands out VF pairs and VLAN ids (unique per cable), never
//     touches a VF that someone else configured, records every VF's
//     original settings and restores them on release.
//   - SimNIC stands in for the hardware on machines without SR-IOV: a fake
//     sysfs tree, VF netdevs realised as veth ends whose peers live in a
//     hidden namespace, and a user-space cable that carries real
//     802.1Q-tagged frames between the two PFs and enforces each VF's
//     VLAN, spoofchk and link-state settings. Its data path (simswitch.go)
//     is one real-time thread per cable over TPACKET ring ports, waiting
//     for all of them in one epoll_wait and forwarding in batches; full
//     rings drop and are counted rather than block.
//
// Nothing here assumes that hardware exists: every entry point reports a
// clear error (ErrUnknownPF, ErrTooManyVFs, ErrVFIOUnavailable, ...) and
// leaves VFs as they were.
package sriov
