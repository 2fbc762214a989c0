package bpfsys

import (
	"encoding/binary"
	"fmt"
)

// Asm is a tiny eBPF assembler: the instructions hymn's programs use
// (the BPF switch's, the XDP redirect), and labels for jumps. Encoding (one 8-byte slot per instruction, two for
// a 64-bit immediate load): opcode, dst register in the low nibble and src
// register in the high nibble of the second byte, a signed 16-bit offset,
// a signed 32-bit immediate; all little-endian (this package runs on
// little-endian machines only, as the kernel's BPF does on x86 and arm64).

// Reg is a BPF register.
type Reg uint8

const (
	R0 Reg = iota
	R1
	R2
	R3
	R4
	R5
	R6
	R7
	R8
	R9
	R10 // frame pointer, read only
)

// Opcodes (class | operation | source), from the kernel's uapi bpf.h and
// bpf_common.h.
const (
	OpMovImm    = 0xb7 // ALU64 | MOV | K
	OpMovReg    = 0xbf // ALU64 | MOV | X
	OpAddImm    = 0x07 // ALU64 | ADD | K
	OpSubReg    = 0x1f // ALU64 | SUB | X
	OpAndImm    = 0x57 // ALU64 | AND | K
	OpLshImm    = 0x67 // ALU64 | LSH | K
	OpAddReg    = 0x0f // ALU64 | ADD | X
	OpLdxB      = 0x71 // LDX | MEM | B
	OpLdxH      = 0x69 // LDX | MEM | H
	OpLdxW      = 0x61 // LDX | MEM | W
	OpLdxDW     = 0x79 // LDX | MEM | DW
	OpStxH      = 0x6b // STX | MEM | H
	OpStxW      = 0x63 // STX | MEM | W
	OpStxDW     = 0x7b // STX | MEM | DW
	OpStH       = 0x6a // ST | MEM | H
	OpStW       = 0x62 // ST | MEM | W
	OpLdImm64   = 0x18 // LD | IMM | DW (two slots)
	OpJa        = 0x05 // JMP | JA
	OpJeqImm    = 0x15 // JMP | JEQ | K
	OpJeqReg    = 0x1d // JMP | JEQ | X
	OpJneImm    = 0x55 // JMP | JNE | K
	OpJneReg    = 0x5d // JMP | JNE | X
	OpJgtReg    = 0x2d // JMP | JGT | X (unsigned)
	OpJgeImm    = 0x35 // JMP | JGE | K (unsigned)
	OpJleImm    = 0xb5 // JMP | JLE | K (unsigned)
	OpJsgtReg   = 0x6d // JMP | JSGT | X (signed)
	OpCall      = 0x85 // JMP | CALL
	OpExit      = 0x95 // JMP | EXIT
	pseudoMapFD = 1    // BPF_PSEUDO_MAP_FD: a 64-bit load's immediate is a map fd
)

type insn struct {
	op       uint8
	dst, src Reg
	off      int16
	imm      int32
	imm2     uint32 // a 64-bit load's upper half (its second slot)
	target   string // a jump's label, resolved by Assemble
}

// Asm collects instructions and labels.
type Asm struct {
	insns  []insn
	labels map[string]int // label -> slot index
	err    error
}

// NewAsm starts an empty program.
func NewAsm() *Asm { return &Asm{labels: map[string]int{}} }

func (a *Asm) emit(i insn) { a.insns = append(a.insns, i) }

// Label names the next instruction.
func (a *Asm) Label(name string) {
	if _, dup := a.labels[name]; dup && a.err == nil {
		a.err = fmt.Errorf("label %s defined twice", name)
	}
	a.labels[name] = a.slots()
}

// slots counts the slots emitted so far (a 64-bit load takes two).
func (a *Asm) slots() int {
	n := 0
	for _, i := range a.insns {
		n++
		if i.op == OpLdImm64 {
			n++
		}
	}
	return n
}

func (a *Asm) MovImm(dst Reg, imm int32) { a.emit(insn{op: OpMovImm, dst: dst, imm: imm}) }
func (a *Asm) Mov(dst, src Reg)          { a.emit(insn{op: OpMovReg, dst: dst, src: src}) }
func (a *Asm) AddImm(dst Reg, imm int32) { a.emit(insn{op: OpAddImm, dst: dst, imm: imm}) }
func (a *Asm) Add(dst, src Reg)          { a.emit(insn{op: OpAddReg, dst: dst, src: src}) }
func (a *Asm) Sub(dst, src Reg)          { a.emit(insn{op: OpSubReg, dst: dst, src: src}) }
func (a *Asm) AndImm(dst Reg, imm int32) { a.emit(insn{op: OpAndImm, dst: dst, imm: imm}) }
func (a *Asm) LshImm(dst Reg, imm int32) { a.emit(insn{op: OpLshImm, dst: dst, imm: imm}) }
func (a *Asm) Ldx(op uint8, dst, src Reg, off int16) {
	a.emit(insn{op: op, dst: dst, src: src, off: off})
}
func (a *Asm) Stx(op uint8, dst Reg, off int16, src Reg) {
	a.emit(insn{op: op, dst: dst, src: src, off: off})
}
func (a *Asm) St(op uint8, dst Reg, off int16, imm int32) {
	a.emit(insn{op: op, dst: dst, off: off, imm: imm})
}

// LdImm64 loads a 64-bit constant.
func (a *Asm) LdImm64(dst Reg, v uint64) {
	a.emit(insn{op: OpLdImm64, dst: dst, imm: int32(uint32(v)), imm2: uint32(v >> 32)})
}

// LdMap loads a map's address (the kernel replaces the fd by the map).
func (a *Asm) LdMap(dst Reg, fd int) {
	a.emit(insn{op: OpLdImm64, dst: dst, src: pseudoMapFD, imm: int32(fd)})
}

func (a *Asm) Jmp(op uint8, dst Reg, imm int32, target string) {
	a.emit(insn{op: op, dst: dst, imm: imm, target: target})
}
func (a *Asm) JmpReg(op uint8, dst, src Reg, target string) {
	a.emit(insn{op: op, dst: dst, src: src, target: target})
}
func (a *Asm) Ja(target string)  { a.emit(insn{op: OpJa, target: target}) }
func (a *Asm) Call(helper int32) { a.emit(insn{op: OpCall, imm: helper}) }
func (a *Asm) Exit()             { a.emit(insn{op: OpExit}) }

// Assemble resolves the labels and encodes the program.
func (a *Asm) Assemble() ([]byte, error) {
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
		if i.op == OpLdImm64 {
			hi := make([]byte, 8)
			binary.LittleEndian.PutUint32(hi[4:], i.imm2)
			out = append(out, hi...)
			slot++
		}
	}
	return out, nil
}
