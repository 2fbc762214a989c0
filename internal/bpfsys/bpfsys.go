// Package bpfsys assembles eBPF programs (Asm, a tiny assembler with
// labels) and loads them through the bpf(2) system call, on the attr
// layout of uapi bpf.h: no libbpf, no compiler. hymn's programs are
// hand-assembled instructions (links.RedirectXDP, the switch of package
// bpfswitch); this is the one place that encodes them, hands them to the
// kernel and turns a refusal into an error that says why.
package bpfsys

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// progLoadAttr is the BPF_PROG_LOAD part of union bpf_attr up to
// prog_name: the kernel accepts a shorter attr than its own and treats
// the rest as zero.
type progLoadAttr struct {
	progType    uint32
	insnCnt     uint32
	insns       uint64
	license     uint64
	logLevel    uint32
	logSize     uint32
	logBuf      uint64
	kernVersion uint32
	progFlags   uint32
	progName    [16]byte
}

// Syscall runs bpf(cmd, attr, size) and returns its result.
func Syscall(cmd int, attr unsafe.Pointer, size uintptr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// Pin keeps the objects at the given addresses where they are until the
// returned function is called: an address that reaches the kernel as an
// integer inside an attr (a key, a value, a program's instructions) is
// invisible to the garbage collector, and an object on a goroutine's stack
// moves when the stack grows. Pinning moves such an object to the heap (the
// argument escapes) and keeps it there; nil pointers are skipped.
func Pin(ptrs ...unsafe.Pointer) (unpin func()) {
	var p runtime.Pinner
	for _, ptr := range ptrs {
		if ptr != nil {
			p.Pin(ptr)
		}
	}
	return p.Unpin
}

// ObjName is a kernel object name: at most 15 characters of
// [A-Za-z0-9_.], others left out.
func ObjName(s string) [16]byte {
	var b [16]byte
	n := 0
	for _, c := range []byte(s) {
		if n == 15 {
			break
		}
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' {
			b[n] = c
			n++
		}
	}
	return b
}

// LoadProgram loads a GPL program (bpf_redirect and bpf_clone_redirect
// are GPL-only) of progType, named name, and returns its descriptor,
// close-on-exec. It verifies without a log first (logging a long walk
// costs time and may overflow the buffer); when the kernel refuses, it
// loads again with a log, for the verifier's last words.
func LoadProgram(progType uint32, insns []byte, name string) (int, error) {
	license := []byte("GPL\x00")
	defer Pin(unsafe.Pointer(&insns[0]), unsafe.Pointer(&license[0]))()
	attr := progLoadAttr{
		progType: progType,
		insnCnt:  uint32(len(insns) / 8),
		insns:    uint64(uintptr(unsafe.Pointer(&insns[0]))),
		license:  uint64(uintptr(unsafe.Pointer(&license[0]))),
		progName: ObjName(name),
	}
	fd, err := Syscall(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(license)
	if err == nil {
		return fd, nil
	}
	logBuf := make([]byte, 1<<20)
	attr.logLevel = 1
	attr.logSize = uint32(len(logBuf))
	defer Pin(unsafe.Pointer(&logBuf[0]))()
	attr.logBuf = uint64(uintptr(unsafe.Pointer(&logBuf[0])))
	fd, err2 := Syscall(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	runtime.KeepAlive(insns)
	runtime.KeepAlive(license)
	runtime.KeepAlive(logBuf)
	if err2 == nil {
		return fd, nil // it passed this time (a transient ENOMEM, say)
	}
	msg, _, _ := strings.Cut(string(logBuf), "\x00")
	if lines := strings.Split(strings.TrimSpace(msg), "\n"); len(lines) > 8 {
		msg = strings.Join(lines[len(lines)-8:], "\n") // the verifier's reason is at the end
	}
	if msg = strings.TrimSpace(msg); msg != "" {
		return -1, fmt.Errorf("loading BPF program %s: %w:\n%s", name, err, msg)
	}
	return -1, fmt.Errorf("loading BPF program %s: %w", name, err)
}
