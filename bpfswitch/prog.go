package bpfswitch

import "time"

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

// Stack layout (offsets from the frame pointer r10).
const (
	stSrcKey = -8  // source MAC, zero-padded to 8 bytes: the fdb key
	stDstKey = -16 // destination MAC, likewise
	stValue  = -32 // an fdb value being written: port u32, pad u32, time u64
	stZero   = -40 // u32 0: the port list's key
)

// fdb map: key = MAC in 8 bytes (6 + 2 zero), value = fdbValue.
const (
	fdbKeySize   = 8
	fdbValueSize = 16 // ifindex u32, pad u32, ktime ns u64
)

// lookup emits r0 = bpf_map_lookup_elem(map, r10+key): the value, or 0.
func lookup(a *asm, mapFd int, key int16) {
	a.ldMap(r1, mapFd)
	a.mov(r2, r10)
	a.addImm(r2, int32(key))
	a.call(fnMapLookupElem)
}

// program assembles the switch: fdb and ports are the map descriptors,
// maxPorts the flood loop's bound. r6 holds the context, r7 the ingress
// port, r8 the time (then the loop index), r9 the port list.
func program(fdb, ports, maxPorts int) ([]byte, error) {
	a := newAsm()
	a.mov(r6, r1)
	a.ldx(opLdxW, r7, r6, skbIfindex)
	a.ldx(opLdxW, r2, r6, skbData)
	a.ldx(opLdxW, r3, r6, skbDataEnd)
	a.mov(r4, r2)
	a.addImm(r4, 14)
	a.jmpReg(opJgtReg, r4, r3, "drop") // shorter than an Ethernet header

	// Copy both addresses to the stack: helper calls invalidate packet
	// pointers, the stack stays.
	a.ldx(opLdxW, r4, r2, 6)
	a.stx(opStxW, r10, stSrcKey, r4)
	a.ldx(opLdxH, r4, r2, 10)
	a.stx(opStxH, r10, stSrcKey+4, r4)
	a.st(opStH, r10, stSrcKey+6, 0)
	a.ldx(opLdxW, r4, r2, 0)
	a.stx(opStxW, r10, stDstKey, r4)
	a.ldx(opLdxH, r4, r2, 4)
	a.stx(opStxH, r10, stDstKey+4, r4)
	a.st(opStH, r10, stDstKey+6, 0)

	// A source that is a group address or all zeros is invalid: the bridge
	// drops such frames (br_handle_frame), so does this switch.
	a.ldx(opLdxB, r4, r10, stSrcKey)
	a.andImm(r4, 1)
	a.jmp(opJneImm, r4, 0, "drop")
	a.ldx(opLdxDW, r4, r10, stSrcKey)
	a.jmp(opJeqImm, r4, 0, "drop")

	// IEEE 802.1D reserved link-local groups 01:80:c2:00:00:01..0f (pause,
	// LACP, LLDP, ...) are never forwarded; 01:80:c2:00:00:00 (STP) is, as
	// a bridge without STP does.
	a.ldx(opLdxW, r4, r10, stDstKey)
	a.jmp(opJneImm, r4, 0x00c28001, "learn") // bytes 01 80 c2 00, little-endian
	a.ldx(opLdxH, r4, r10, stDstKey+4)
	a.jmp(opJeqImm, r4, 0, "learn")
	a.andImm(r4, 0xf0ff) // byte 4 must be 0, byte 5 below 0x10
	a.jmp(opJeqImm, r4, 0, "drop")

	// Learn: source -> ingress port, written when new, moved or stale.
	a.label("learn")
	a.call(fnKtimeGetNs)
	a.mov(r8, r0)
	lookup(a, fdb, stSrcKey)
	a.jmp(opJeqImm, r0, 0, "write")
	a.ldx(opLdxW, r1, r0, 0)
	a.jmpReg(opJneReg, r1, r7, "write")
	a.ldx(opLdxDW, r1, r0, 8)
	a.mov(r2, r8)
	a.sub(r2, r1)
	a.jmp(opJleImm, r2, int32(refresh), "forward")
	a.label("write")
	a.stx(opStxW, r10, stValue, r7)
	a.st(opStW, r10, stValue+4, 0)
	a.stx(opStxDW, r10, stValue+8, r8)
	a.ldMap(r1, fdb)
	a.mov(r2, r10)
	a.addImm(r2, stSrcKey)
	a.mov(r3, r10)
	a.addImm(r3, stValue)
	a.movImm(r4, bpfAny)
	a.call(fnMapUpdateElem) // a full table just means no learning: frames flood

	// Forward: group destinations and unknown or aged ones flood; a known
	// one on another port gets the frame alone; one on the ingress port
	// gets nothing (the frame is already there).
	a.label("forward")
	a.ldx(opLdxB, r4, r10, stDstKey)
	a.andImm(r4, 1)
	a.jmp(opJneImm, r4, 0, "flood")
	lookup(a, fdb, stDstKey)
	a.jmp(opJeqImm, r0, 0, "flood")
	a.ldx(opLdxDW, r1, r0, 8)
	a.mov(r2, r8)
	a.sub(r2, r1)
	a.ldImm64(r3, uint64(Ageing))
	a.jmpReg(opJsgtReg, r2, r3, "flood")
	a.ldx(opLdxW, r1, r0, 0)
	a.jmpReg(opJeqReg, r1, r7, "drop")
	a.movImm(r2, 0) // flags 0: out of the port (egress)
	a.call(fnRedirect)
	a.exit() // TC_ACT_REDIRECT, from the helper

	// Flood: a clone to every port of the list but the ingress one; the
	// list ends at its first 0 or after maxPorts entries.
	a.label("flood")
	a.st(opStW, r10, stZero, 0)
	lookup(a, ports, stZero)
	a.jmp(opJeqImm, r0, 0, "drop")
	a.mov(r9, r0)
	a.movImm(r8, 0)
	a.label("loop")
	a.jmp(opJgeImm, r8, int32(maxPorts), "drop")
	a.mov(r1, r8)
	a.lshImm(r1, 2)
	a.mov(r2, r9)
	a.add(r2, r1)
	a.ldx(opLdxW, r2, r2, 0)
	a.jmp(opJeqImm, r2, 0, "drop")
	a.addImm(r8, 1)
	a.jmpReg(opJeqReg, r2, r7, "loop")
	a.mov(r1, r6)
	a.movImm(r3, 0)
	a.call(fnCloneRedirect) // a port that is gone or down just fails
	a.ja("loop")

	a.label("drop")
	a.movImm(r0, tcActShot)
	a.exit()
	return a.assemble()
}
