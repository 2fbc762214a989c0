package links

import (
	"encoding/binary"
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
		defer unix.Close(fd)
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
func redirectProgram(ifindex int) []byte {
	insn := func(code, regs byte, imm int32) []byte {
		b := make([]byte, 8)
		b[0], b[1] = code, regs
		binary.LittleEndian.PutUint32(b[4:], uint32(imm))
		return b
	}
	const (
		movImm = 0xb7 // BPF_ALU64 | BPF_MOV | BPF_K
		call   = 0x85 // BPF_JMP | BPF_CALL
		exit   = 0x95 // BPF_JMP | BPF_EXIT
	)
	var p []byte
	p = append(p, insn(movImm, 1, int32(ifindex))...)
	p = append(p, insn(movImm, 2, 0)...)
	p = append(p, insn(call, 0, bpfFuncRedirect)...)
	p = append(p, insn(exit, 0, 0)...)
	return p
}

func loadRedirect(ifindex int) (int, error) {
	return bpfsys.LoadProgram(unix.BPF_PROG_TYPE_XDP, redirectProgram(ifindex), "hymn_redirect")
}
