package bpfswitch

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The bpf(2) calls the switch needs, on the attr layouts of uapi bpf.h
// (prefixes of union bpf_attr: the kernel accepts a shorter attr than its
// own and zero-fills the rest).

type mapCreateAttr struct {
	mapType    uint32
	keySize    uint32
	valueSize  uint32
	maxEntries uint32
	mapFlags   uint32
	innerMapFd uint32
	numaNode   uint32
	mapName    [16]byte
}

type mapElemAttr struct {
	mapFd uint32
	_     uint32
	key   uint64
	value uint64 // value, or next_key for BPF_MAP_GET_NEXT_KEY
	flags uint64
}

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

func bpf(cmd int, attr unsafe.Pointer, size uintptr) (int, error) {
	r, _, errno := unix.Syscall(unix.SYS_BPF, uintptr(cmd), uintptr(attr), size)
	if errno != 0 {
		return -1, errno
	}
	return int(r), nil
}

// objName is a kernel object name: at most 15 characters of [A-Za-z0-9_.].
func objName(s string) [16]byte {
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

// createMap makes a map; its descriptor is close-on-exec.
func createMap(mapType, keySize, valueSize, maxEntries, flags uint32, name string) (int, error) {
	attr := mapCreateAttr{mapType: mapType, keySize: keySize, valueSize: valueSize, maxEntries: maxEntries,
		mapFlags: flags, mapName: objName(name)}
	fd, err := bpf(unix.BPF_MAP_CREATE, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err != nil {
		return -1, fmt.Errorf("creating BPF map %s: %w", name, err)
	}
	return fd, nil
}

func mapUpdate(fd int, key, value unsafe.Pointer) error {
	attr := mapElemAttr{mapFd: uint32(fd), key: uint64(uintptr(key)), value: uint64(uintptr(value)), flags: bpfAny}
	_, err := bpf(unix.BPF_MAP_UPDATE_ELEM, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	return err
}

func mapLookup(fd int, key, value unsafe.Pointer) error {
	attr := mapElemAttr{mapFd: uint32(fd), key: uint64(uintptr(key)), value: uint64(uintptr(value))}
	_, err := bpf(unix.BPF_MAP_LOOKUP_ELEM, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	return err
}

func mapDelete(fd int, key unsafe.Pointer) error {
	attr := mapElemAttr{mapFd: uint32(fd), key: uint64(uintptr(key))}
	_, err := bpf(unix.BPF_MAP_DELETE_ELEM, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	return err
}

// mapNextKey writes the key after key (the first one for a nil key) to
// next; it returns false after the last.
func mapNextKey(fd int, key, next unsafe.Pointer) (bool, error) {
	attr := mapElemAttr{mapFd: uint32(fd), key: uint64(uintptr(key)), value: uint64(uintptr(next))}
	_, err := bpf(unix.BPF_MAP_GET_NEXT_KEY, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}

// loadProgram loads a tc (cls_bpf) program. It verifies without a log
// first (a log of a large walk costs time and may overflow); on failure it
// loads again with one, for the verifier's reason.
func loadProgram(prog []byte, name string) (int, error) {
	license := []byte("GPL\x00") // clone_redirect and redirect are GPL-only
	attr := progLoadAttr{
		progType: unix.BPF_PROG_TYPE_SCHED_CLS,
		insnCnt:  uint32(len(prog) / 8),
		insns:    uint64(uintptr(unsafe.Pointer(&prog[0]))),
		license:  uint64(uintptr(unsafe.Pointer(&license[0]))),
		progName: objName(name),
	}
	fd, err := bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err == nil {
		runtime.KeepAlive(prog)
		runtime.KeepAlive(license)
		return fd, nil
	}
	logBuf := make([]byte, 1<<20)
	attr.logLevel = 1
	attr.logSize = uint32(len(logBuf))
	attr.logBuf = uint64(uintptr(unsafe.Pointer(&logBuf[0])))
	if fd, err2 := bpf(unix.BPF_PROG_LOAD, unsafe.Pointer(&attr), unsafe.Sizeof(attr)); err2 == nil {
		return fd, nil // it passed this time (a transient ENOMEM, say)
	}
	runtime.KeepAlive(prog)
	runtime.KeepAlive(license)
	runtime.KeepAlive(logBuf)
	msg, _, _ := strings.Cut(string(logBuf), "\x00")
	if lines := strings.Split(strings.TrimSpace(msg), "\n"); len(lines) > 8 {
		msg = strings.Join(lines[len(lines)-8:], "\n") // the verifier's last words say why
	}
	if msg != "" {
		return -1, fmt.Errorf("loading the switch's BPF program: %w:\n%s", err, msg)
	}
	return -1, fmt.Errorf("loading the switch's BPF program: %w", err)
}
