package bpfswitch

import (
	"time"

	"github.com/hymn-net/hymn/internal/bpfsys"
)

// MaxPorts is the most ports one switch takes: the flood loop's bound and
// the size of the port list. The verifier walks the loop once per possible
// iteration, so the bound costs load time (about 1 ms per 256 ports on a
// 2-vCPU VM), not forwarding time: a flood visits only the ports there are.
const MaxPorts = 1024

// Ageing is how long a learned address stays valid without a frame from
// it: the Linux bridge's default ageing time. Older entries count as
// unknown (the frame is flooded) and are overwritten by the next frame.
const Ageing = 300 * time.Second

// refresh is how often a known address's time stamp is rewritten while
// frames keep coming from the same port: a map update per frame would
// cost more than the forwarding itself.
const refresh = time.Second

// Offsets in struct __sk_buff (uapi bpf.h) the program reads.
const (
	skbIfindex = 40 // ifindex: the device the frame arrived on, at ingress
	skbData    = 76 // data: the frame's first byte (the MAC header at tc ingress)
	skbDataEnd = 80 // data_end
)

// Helper function numbers (uapi bpf.h, enum bpf_func_id).
const (
	fnMapLookupElem = 1
	fnMapUpdateElem = 2
	fnKtimeGetNs    = 5
	fnCloneRedirect = 13
	fnRedirect      = 23
)

const (
	tcActShot = 2 // TC_ACT_SHOT: drop
	bpfAny    = 0 // BPF_ANY: create or update
)

// Stack layout (offsets from the frame pointer bpfsys.R10).
const (
	stSrcKey = -8  // source MAC, zero-padded to 8 bytes: the fdb key
	stDstKey = -16 // destination MAC, likewise
	stValue  = -32 // an fdb value being written: port u32, pad u32, time u64
	stZero   = -40 // u32 0: the port list's key
	stRouter = -48 // 8 zero bytes: the fdb key of the router record
)

// ICMPv6 types the switch looks at (RFC 4861, RFC 2710, RFC 3810).
const (
	icmp6MLDQuery    = 130
	icmp6MLDReport   = 131
	icmp6MLDDone     = 132
	icmp6RouterSol   = 133
	icmp6RouterAdv   = 134
	icmp6MLDv2Report = 143
	ipprotoHopOpts   = 0
	ipprotoICMPv6    = 58
	ipprotoPIM       = 103
)

// fdb map: key = MAC in 8 bytes (6 + 2 zero), value = fdbValue.
const (
	fdbKeySize   = 8
	fdbValueSize = 16 // ifindex u32, pad u32, ktime ns u64
)

// lookup emits bpfsys.R0 = bpf_map_lookup_elem(map, bpfsys.R10+key): the value, or 0.
func lookup(a *bpfsys.Asm, mapFd int, key int16) {
	a.LdMap(bpfsys.R1, mapFd)
	a.Mov(bpfsys.R2, bpfsys.R10)
	a.AddImm(bpfsys.R2, int32(key))
	a.Call(fnMapLookupElem)
}

// program assembles the switch: fdb and ports are the map descriptors,
// maxPorts the flood loop's bound. bpfsys.R6 holds the context, bpfsys.R7 the ingress
// port, bpfsys.R8 the time (then the loop index), bpfsys.R9 the port list.
func program(fdb, ports, maxPorts int) ([]byte, error) {
	a := bpfsys.NewAsm()
	a.Mov(bpfsys.R6, bpfsys.R1)
	a.Ldx(bpfsys.OpLdxW, bpfsys.R7, bpfsys.R6, skbIfindex)
	a.Ldx(bpfsys.OpLdxW, bpfsys.R2, bpfsys.R6, skbData)
	a.Ldx(bpfsys.OpLdxW, bpfsys.R3, bpfsys.R6, skbDataEnd)
	a.Mov(bpfsys.R4, bpfsys.R2)
	a.AddImm(bpfsys.R4, 14)
	a.JmpReg(bpfsys.OpJgtReg, bpfsys.R4, bpfsys.R3, "drop") // shorter than an Ethernet header

	// Copy both addresses to the stack: helper calls invalidate packet
	// pointers, the stack stays.
	a.Ldx(bpfsys.OpLdxW, bpfsys.R4, bpfsys.R2, 6)
	a.Stx(bpfsys.OpStxW, bpfsys.R10, stSrcKey, bpfsys.R4)
	a.Ldx(bpfsys.OpLdxH, bpfsys.R4, bpfsys.R2, 10)
	a.Stx(bpfsys.OpStxH, bpfsys.R10, stSrcKey+4, bpfsys.R4)
	a.St(bpfsys.OpStH, bpfsys.R10, stSrcKey+6, 0)
	a.Ldx(bpfsys.OpLdxW, bpfsys.R4, bpfsys.R2, 0)
	a.Stx(bpfsys.OpStxW, bpfsys.R10, stDstKey, bpfsys.R4)
	a.Ldx(bpfsys.OpLdxH, bpfsys.R4, bpfsys.R2, 4)
	a.Stx(bpfsys.OpStxH, bpfsys.R10, stDstKey+4, bpfsys.R4)
	a.St(bpfsys.OpStH, bpfsys.R10, stDstKey+6, 0)

	// A source that is a group address or all zeros is invalid: the bridge
	// drops such frames (br_handle_frame), so does this switch.
	a.Ldx(bpfsys.OpLdxB, bpfsys.R4, bpfsys.R10, stSrcKey)
	a.AndImm(bpfsys.R4, 1)
	a.Jmp(bpfsys.OpJneImm, bpfsys.R4, 0, "drop")
	a.Ldx(bpfsys.OpLdxDW, bpfsys.R4, bpfsys.R10, stSrcKey)
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, 0, "drop")

	// IEEE 802.1D reserved link-local groups 01:80:c2:00:00:01..0f (pause,
	// LACP, LLDP, ...) are never forwarded; 01:80:c2:00:00:00 (STP) is, as
	// a bridge without STP does.
	a.Ldx(bpfsys.OpLdxW, bpfsys.R4, bpfsys.R10, stDstKey)
	a.Jmp(bpfsys.OpJneImm, bpfsys.R4, 0x00c28001, "learn") // bytes 01 80 c2 00, little-endian
	a.Ldx(bpfsys.OpLdxH, bpfsys.R4, bpfsys.R10, stDstKey+4)
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, 0, "learn")
	a.AndImm(bpfsys.R4, 0xf0ff) // byte 4 must be 0, byte 5 below 0x10
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, 0, "drop")

	// Learn: source -> ingress port, written when new, moved or stale.
	a.Label("learn")
	a.Call(fnKtimeGetNs)
	a.Mov(bpfsys.R8, bpfsys.R0)
	lookup(a, fdb, stSrcKey)
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R0, 0, "write")
	a.Ldx(bpfsys.OpLdxW, bpfsys.R1, bpfsys.R0, 0)
	a.JmpReg(bpfsys.OpJneReg, bpfsys.R1, bpfsys.R7, "write")
	a.Ldx(bpfsys.OpLdxDW, bpfsys.R1, bpfsys.R0, 8)
	a.Mov(bpfsys.R2, bpfsys.R8)
	a.Sub(bpfsys.R2, bpfsys.R1)
	a.Jmp(bpfsys.OpJleImm, bpfsys.R2, int32(refresh), "forward")
	a.Label("write")
	a.Stx(bpfsys.OpStxW, bpfsys.R10, stValue, bpfsys.R7)
	a.St(bpfsys.OpStW, bpfsys.R10, stValue+4, 0)
	a.Stx(bpfsys.OpStxDW, bpfsys.R10, stValue+8, bpfsys.R8)
	a.LdMap(bpfsys.R1, fdb)
	a.Mov(bpfsys.R2, bpfsys.R10)
	a.AddImm(bpfsys.R2, stSrcKey)
	a.Mov(bpfsys.R3, bpfsys.R10)
	a.AddImm(bpfsys.R3, stValue)
	a.MovImm(bpfsys.R4, bpfAny)
	a.Call(fnMapUpdateElem) // a full table just means no learning: frames flood

	// Forward: group destinations and unknown or aged ones flood; a known
	// one on another port gets the frame alone; one on the ingress port
	// gets nothing (the frame is already there).
	a.Label("forward")
	a.Ldx(bpfsys.OpLdxB, bpfsys.R4, bpfsys.R10, stDstKey)
	a.AndImm(bpfsys.R4, 1)
	a.Jmp(bpfsys.OpJneImm, bpfsys.R4, 0, "group")
	lookup(a, fdb, stDstKey)
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R0, 0, "flood")
	a.Ldx(bpfsys.OpLdxDW, bpfsys.R1, bpfsys.R0, 8)
	a.Mov(bpfsys.R2, bpfsys.R8)
	a.Sub(bpfsys.R2, bpfsys.R1)
	a.LdImm64(bpfsys.R3, uint64(Ageing))
	a.JmpReg(bpfsys.OpJsgtReg, bpfsys.R2, bpfsys.R3, "flood")
	a.Ldx(bpfsys.OpLdxW, bpfsys.R1, bpfsys.R0, 0)
	a.JmpReg(bpfsys.OpJeqReg, bpfsys.R1, bpfsys.R7, "drop")
	a.MovImm(bpfsys.R2, 0) // flags 0: out of the port (egress)
	a.Call(fnRedirect)
	a.Exit() // TC_ACT_REDIRECT, from the helper

	// A group destination: IPv6 messages meant for routers only (router
	// solicitations, MLD reports and dones) cross the switch once it has
	// seen a router (a router advertisement, an MLD query or PIM, on any
	// port: the router record, under the all-zero key no source can
	// have); before that no one on the segment would act on them, and
	// every host sends several as it starts. Anything else floods.
	a.Label("group")
	a.Ldx(bpfsys.OpLdxW, bpfsys.R2, bpfsys.R6, skbData) // the helpers invalidated the packet pointers
	a.Ldx(bpfsys.OpLdxW, bpfsys.R3, bpfsys.R6, skbDataEnd)
	a.Mov(bpfsys.R4, bpfsys.R2)
	a.AddImm(bpfsys.R4, 56) // Ethernet, IPv6, two bytes beyond
	a.JmpReg(bpfsys.OpJgtReg, bpfsys.R4, bpfsys.R3, "flood")
	a.Ldx(bpfsys.OpLdxH, bpfsys.R4, bpfsys.R2, 12)
	a.Jmp(bpfsys.OpJneImm, bpfsys.R4, 0xdd86, "flood") // ethertype 86 dd, little-endian
	a.Ldx(bpfsys.OpLdxB, bpfsys.R4, bpfsys.R2, 20)     // next header
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, ipprotoICMPv6, "icmp6")
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, ipprotoPIM, "router")
	a.Jmp(bpfsys.OpJneImm, bpfsys.R4, ipprotoHopOpts, "flood")
	// MLD comes after an 8-byte hop-by-hop header (the router alert).
	a.Ldx(bpfsys.OpLdxB, bpfsys.R4, bpfsys.R2, 55)
	a.Jmp(bpfsys.OpJneImm, bpfsys.R4, 0, "flood")
	a.Ldx(bpfsys.OpLdxB, bpfsys.R4, bpfsys.R2, 54)
	a.Jmp(bpfsys.OpJneImm, bpfsys.R4, ipprotoICMPv6, "flood")
	a.Mov(bpfsys.R4, bpfsys.R2)
	a.AddImm(bpfsys.R4, 63)
	a.JmpReg(bpfsys.OpJgtReg, bpfsys.R4, bpfsys.R3, "flood")
	a.Ldx(bpfsys.OpLdxB, bpfsys.R4, bpfsys.R2, 62)
	a.Ja("type")
	a.Label("icmp6")
	a.Ldx(bpfsys.OpLdxB, bpfsys.R4, bpfsys.R2, 54)
	a.Label("type")
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, icmp6RouterAdv, "router")
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, icmp6MLDQuery, "router")
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, icmp6RouterSol, "to-routers")
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, icmp6MLDReport, "to-routers")
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, icmp6MLDDone, "to-routers")
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R4, icmp6MLDv2Report, "to-routers")
	a.Ja("flood")
	a.Label("to-routers")
	a.St(bpfsys.OpStW, bpfsys.R10, stRouter, 0)
	a.St(bpfsys.OpStW, bpfsys.R10, stRouter+4, 0)
	lookup(a, fdb, stRouter)
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R0, 0, "drop")
	a.Ja("flood")
	a.Label("router") // record it (port, time), then flood the frame
	a.St(bpfsys.OpStW, bpfsys.R10, stRouter, 0)
	a.St(bpfsys.OpStW, bpfsys.R10, stRouter+4, 0)
	a.Stx(bpfsys.OpStxW, bpfsys.R10, stValue, bpfsys.R7)
	a.St(bpfsys.OpStW, bpfsys.R10, stValue+4, 0)
	a.Stx(bpfsys.OpStxDW, bpfsys.R10, stValue+8, bpfsys.R8)
	a.LdMap(bpfsys.R1, fdb)
	a.Mov(bpfsys.R2, bpfsys.R10)
	a.AddImm(bpfsys.R2, stRouter)
	a.Mov(bpfsys.R3, bpfsys.R10)
	a.AddImm(bpfsys.R3, stValue)
	a.MovImm(bpfsys.R4, bpfAny)
	a.Call(fnMapUpdateElem)

	// Flood: a clone to every port of the list but the ingress one; the
	// list ends at its first 0 or after maxPorts entries.
	a.Label("flood")
	a.St(bpfsys.OpStW, bpfsys.R10, stZero, 0)
	lookup(a, ports, stZero)
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R0, 0, "drop")
	a.Mov(bpfsys.R9, bpfsys.R0)
	a.MovImm(bpfsys.R8, 0)
	a.Label("loop")
	a.Jmp(bpfsys.OpJgeImm, bpfsys.R8, int32(maxPorts), "drop")
	a.Mov(bpfsys.R1, bpfsys.R8)
	a.LshImm(bpfsys.R1, 2)
	a.Mov(bpfsys.R2, bpfsys.R9)
	a.Add(bpfsys.R2, bpfsys.R1)
	a.Ldx(bpfsys.OpLdxW, bpfsys.R2, bpfsys.R2, 0)
	a.Jmp(bpfsys.OpJeqImm, bpfsys.R2, 0, "drop")
	a.AddImm(bpfsys.R8, 1)
	a.JmpReg(bpfsys.OpJeqReg, bpfsys.R2, bpfsys.R7, "loop")
	a.Mov(bpfsys.R1, bpfsys.R6)
	a.MovImm(bpfsys.R3, 0)
	a.Call(fnCloneRedirect) // a port that is gone or down just fails
	a.Ja("loop")

	a.Label("drop")
	a.MovImm(bpfsys.R0, tcActShot)
	a.Exit()
	return a.Assemble()
}
