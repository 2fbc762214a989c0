package links

import (
	"fmt"

	"github.com/hymn-net/hymn/internal/bpfsys"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// RedirectXDP makes every frame that arrives on device from leave through
// device to (both in ns) inside the kernel: a four-instruction XDP program
// on from, in generic mode (so any device: VXLAN, veth), that returns
// bpf_redirect(to). The frames never reach packet sockets on from, and
// take no wake-up of any thread: this is how a direction that needs no
// emulation crosses an emulator's ports at kernel speed. The program goes
// with from when it is deleted.
func RedirectXDP(ns Namespace, from, to string) error {
	err := netnsx.Do(ns.NsHandle(), func() error {
		src, err := netlink.LinkByName(from)
		if err != nil {
			return err
		}
		dst, err := netlink.LinkByName(to)
		if err != nil {
			return err
		}
		fd, err := loadRedirect(dst.Attrs().Index)
		if err != nil {
			return err
		}
		// The attachment holds its own reference to the program.
		defer func() { _ = unix.Close(fd) }()
		return netlink.LinkSetXdpFdWithFlags(src, fd, xdpFlagsSKBMode)
	})
	if err != nil {
		return fmt.Errorf("XDP redirect %s -> %s: %w", from, to, err)
	}
	return nil
}

const (
	xdpFlagsSKBMode = 1 << 1 // XDP_FLAGS_SKB_MODE: generic XDP
	bpfFuncRedirect = 23     // bpf_redirect(ifindex, flags)
)

// redirectProgram is r1 = ifindex; r2 = 0; call bpf_redirect; exit: the
// helper's return value (XDP_REDIRECT) is the verdict.
func redirectProgram(ifindex int) ([]byte, error) {
	a := bpfsys.NewAsm()
	a.MovImm(bpfsys.R1, int32(ifindex))
	a.MovImm(bpfsys.R2, 0)
	a.Call(bpfFuncRedirect)
	a.Exit()
	return a.Assemble()
}

func loadRedirect(ifindex int) (int, error) {
	prog, err := redirectProgram(ifindex)
	if err != nil {
		return -1, err
	}
	return bpfsys.LoadProgram(unix.BPF_PROG_TYPE_XDP, prog, "hymn_redirect")
}
