package bpfswitch

import (
	"encoding/binary"
	"fmt"
)

// A tiny eBPF assembler: just the instructions the switch program uses,
// and labels for jumps. Encoding (one 8-byte slot per instruction, two for
// a 64-bit immediate load): opcode, dst register in the low nibble and src
// register in the high nibble of the second byte, a signed 16-bit offset,
// a signed 32-bit immediate; all little-endian (this package runs on
// little-endian machines only, as the kernel's BPF does on x86 and arm64).

type reg uint8

const (
	r0 reg = iota
	r1
	r2
	r3
	r4
	r5
	r6
	r7
	r8
	r9
	r10 // frame pointer, read only
)

// Opcodes (class | operation | source), from the kernel's uapi bpf.h and
// bpf_common.h.
const (
	opMovImm   = 0xb7 // ALU64 | MOV | K
	opMovReg   = 0xbf // ALU64 | MOV | X
	opAddImm   = 0x07 // ALU64 | ADD | K
	opSubReg   = 0x1f // ALU64 | SUB | X
	opAndImm   = 0x57 // ALU64 | AND | K
	opLshImm   = 0x67 // ALU64 | LSH | K
	opAddReg   = 0x0f // ALU64 | ADD | X
	opLdxB     = 0x71 // LDX | MEM | B
	opLdxH     = 0x69 // LDX | MEM | H
	opLdxW     = 0x61 // LDX | MEM | W
	opLdxDW    = 0x79 // LDX | MEM | DW
	opStxH     = 0x6b // STX | MEM | H
	opStxW     = 0x63 // STX | MEM | W
	opStxDW    = 0x7b // STX | MEM | DW
	opStH      = 0x6a // ST | MEM | H
	opStW      = 0x62 // ST | MEM | W
	opLdImm64  = 0x18 // LD | IMM | DW (two slots)
	opJa       = 0x05 // JMP | JA
	opJeqImm   = 0x15 // JMP | JEQ | K
	opJeqReg   = 0x1d // JMP | JEQ | X
	opJneImm   = 0x55 // JMP | JNE | K
	opJneReg   = 0x5d // JMP | JNE | X
	opJgtReg   = 0x2d // JMP | JGT | X (unsigned)
	opJgeImm   = 0x35 // JMP | JGE | K (unsigned)
	opJleImm   = 0xb5 // JMP | JLE | K (unsigned)
	opJsgtReg  = 0x6d // JMP | JSGT | X (signed)
	opCall     = 0x85 // JMP | CALL
	opExit     = 0x95 // JMP | EXIT
	pseudoMapF = 1    // BPF_PSEUDO_MAP_FD: a 64-bit load's immediate is a map fd
)

type insn struct {
	op       uint8
	dst, src reg
	off      int16
	imm      int32
	imm2     uint32 // a 64-bit load's upper half (its second slot)
	target   string // a jump's label, resolved by assemble
}

// asm collects instructions and labels.
type asm struct {
	insns  []insn
	labels map[string]int // label -> slot index
	err    error
}

func newAsm() *asm { return &asm{labels: map[string]int{}} }

func (a *asm) emit(i insn) { a.insns = append(a.insns, i) }

// label names the next instruction.
func (a *asm) label(name string) {
	if _, dup := a.labels[name]; dup && a.err == nil {
		a.err = fmt.Errorf("label %s defined twice", name)
	}
	a.labels[name] = a.slots()
}

// slots counts the slots emitted so far (a 64-bit load takes two).
func (a *asm) slots() int {
	n := 0
	for _, i := range a.insns {
		n++
		if i.op == opLdImm64 {
			n++
		}
	}
	return n
}

func (a *asm) movImm(dst reg, imm int32) { a.emit(insn{op: opMovImm, dst: dst, imm: imm}) }
func (a *asm) mov(dst, src reg)          { a.emit(insn{op: opMovReg, dst: dst, src: src}) }
func (a *asm) addImm(dst reg, imm int32) { a.emit(insn{op: opAddImm, dst: dst, imm: imm}) }
func (a *asm) add(dst, src reg)          { a.emit(insn{op: opAddReg, dst: dst, src: src}) }
func (a *asm) sub(dst, src reg)          { a.emit(insn{op: opSubReg, dst: dst, src: src}) }
func (a *asm) andImm(dst reg, imm int32) { a.emit(insn{op: opAndImm, dst: dst, imm: imm}) }
func (a *asm) lshImm(dst reg, imm int32) { a.emit(insn{op: opLshImm, dst: dst, imm: imm}) }
func (a *asm) ldx(op uint8, dst, src reg, off int16) {
	a.emit(insn{op: op, dst: dst, src: src, off: off})
}
func (a *asm) stx(op uint8, dst reg, off int16, src reg) {
	a.emit(insn{op: op, dst: dst, src: src, off: off})
}
func (a *asm) st(op uint8, dst reg, off int16, imm int32) {
	a.emit(insn{op: op, dst: dst, off: off, imm: imm})
}

// ldImm64 loads a 64-bit constant.
func (a *asm) ldImm64(dst reg, v uint64) {
	a.emit(insn{op: opLdImm64, dst: dst, imm: int32(uint32(v)), imm2: uint32(v >> 32)})
}

// ldMap loads a map's address (the kernel replaces the fd by the map).
func (a *asm) ldMap(dst reg, fd int) {
	a.emit(insn{op: opLdImm64, dst: dst, src: pseudoMapF, imm: int32(fd)})
}

func (a *asm) jmp(op uint8, dst reg, imm int32, target string) {
	a.emit(insn{op: op, dst: dst, imm: imm, target: target})
}
func (a *asm) jmpReg(op uint8, dst, src reg, target string) {
	a.emit(insn{op: op, dst: dst, src: src, target: target})
}
func (a *asm) ja(target string)  { a.emit(insn{op: opJa, target: target}) }
func (a *asm) call(helper int32) { a.emit(insn{op: opCall, imm: helper}) }
func (a *asm) exit()             { a.emit(insn{op: opExit}) }

// assemble resolves the labels and encodes the program.
func (a *asm) assemble() ([]byte, error) {
	if a.err != nil {
		return nil, a.err
	}
	var out []byte
	slot := 0
	for _, i := range a.insns {
		off := i.off
		if i.target != "" {
			to, ok := a.labels[i.target]
			if !ok {
				return nil, fmt.Errorf("undefined label %s", i.target)
			}
			d := to - (slot + 1)
			if d < -32768 || d > 32767 {
				return nil, fmt.Errorf("jump to %s too far", i.target)
			}
			off = int16(d)
		}
		b := make([]byte, 8)
		b[0] = i.op
		b[1] = byte(i.dst&0xf) | byte(i.src&0xf)<<4
		binary.LittleEndian.PutUint16(b[2:], uint16(off))
		binary.LittleEndian.PutUint32(b[4:], uint32(i.imm))
		out = append(out, b...)
		slot++
		if i.op == opLdImm64 {
			hi := make([]byte, 8)
			binary.LittleEndian.PutUint32(hi[4:], i.imm2)
			out = append(out, hi...)
			slot++
		}
	}
	return out, nil
}
