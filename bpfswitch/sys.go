package bpfswitch

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/hymn-net/hymn/internal/bpfsys"
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

// bpf is the bpf(2) system call.
var bpf = bpfsys.Syscall

// createMap makes a map; its descriptor is close-on-exec.
func createMap(mapType, keySize, valueSize, maxEntries, flags uint32, name string) (int, error) {
	attr := mapCreateAttr{mapType: mapType, keySize: keySize, valueSize: valueSize, maxEntries: maxEntries,
		mapFlags: flags, mapName: bpfsys.ObjName(name)}
	fd, err := bpf(unix.BPF_MAP_CREATE, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if err != nil {
		return -1, fmt.Errorf("creating BPF map %s: %w", name, err)
	}
	return fd, nil
}

// The key and value pointers travel inside the attr as integers, which the
// garbage collector neither sees nor updates: a key on the caller's stack
// (writePorts' zero) moved with a growing stack before the call, and the
// kernel read a stale slot (the port list's update failed with E2BIG, an
// array index beyond the map, when 8 goroutines attached ports at once).
// bpfsys.Pin moves them to the heap and holds them for the call.

func mapUpdate(fd int, key, value unsafe.Pointer) error {
	defer bpfsys.Pin(key, value)()
	attr := mapElemAttr{mapFd: uint32(fd), key: uint64(uintptr(key)), value: uint64(uintptr(value)), flags: bpfAny}
	_, err := bpf(unix.BPF_MAP_UPDATE_ELEM, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	return err
}

func mapLookup(fd int, key, value unsafe.Pointer) error {
	defer bpfsys.Pin(key, value)()
	attr := mapElemAttr{mapFd: uint32(fd), key: uint64(uintptr(key)), value: uint64(uintptr(value))}
	_, err := bpf(unix.BPF_MAP_LOOKUP_ELEM, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	return err
}

func mapDelete(fd int, key unsafe.Pointer) error {
	defer bpfsys.Pin(key)()
	attr := mapElemAttr{mapFd: uint32(fd), key: uint64(uintptr(key))}
	_, err := bpf(unix.BPF_MAP_DELETE_ELEM, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	return err
}

// mapNextKey writes the key after key (the first one for a nil key) to
// next; it returns false after the last.
func mapNextKey(fd int, key, next unsafe.Pointer) (bool, error) {
	defer bpfsys.Pin(key, next)()
	attr := mapElemAttr{mapFd: uint32(fd), key: uint64(uintptr(key)), value: uint64(uintptr(next))}
	_, err := bpf(unix.BPF_MAP_GET_NEXT_KEY, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}

// loadProgram loads a tc (cls_bpf) program.
func loadProgram(prog []byte, name string) (int, error) {
	return bpfsys.LoadProgram(unix.BPF_PROG_TYPE_SCHED_CLS, prog, name)
}

// objByID opens a map (BPF_MAP_GET_FD_BY_ID) or a program
// (BPF_PROG_GET_FD_BY_ID) by its id; the descriptor is close-on-exec.
// Ids are handed out cyclically over 2^31, so an id of an object that is
// gone names nothing for a long while rather than a newer object.
func objByID(cmd int, id uint32) (int, error) {
	attr := struct{ id, nextID, openFlags uint32 }{id: id}
	return bpf(cmd, unsafe.Pointer(&attr), unsafe.Sizeof(attr))
}

// objID reads the id of the map or program behind fd: the second field of
// both struct bpf_map_info and struct bpf_prog_info, which the kernel
// fills up to the length it is given.
func objID(fd int) (uint32, error) {
	info := new([2]uint32)
	ptr := unsafe.Pointer(info)
	defer bpfsys.Pin(ptr)()
	attr := struct {
		fd, infoLen uint32
		info        uint64
	}{fd: uint32(fd), infoLen: uint32(unsafe.Sizeof(*info)), info: uint64(uintptr(ptr))}
	if _, err := bpf(unix.BPF_OBJ_GET_INFO_BY_FD, unsafe.Pointer(&attr), unsafe.Sizeof(attr)); err != nil {
		return 0, err
	}
	return info[1], nil
}
