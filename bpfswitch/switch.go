package bpfswitch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// fdbEntries bounds the learning table. The table is not preallocated
// (BPF_F_NO_PREALLOC), so the bound costs nothing until addresses are
// learned; a full table stops learning, and frames to addresses it could
// not learn are flooded.
const fdbEntries = 4096

// ErrTooManyPorts is returned by Attach beyond MaxPorts ports.
var ErrTooManyPorts = fmt.Errorf("a bpf switch takes at most %d ports", MaxPorts)

// Switch is one MAC-learning switch: its learning table, its port list and
// its program, which runs on the tc ingress hook of every port. The maps
// and the program live as long as a descriptor or an attachment holds
// them: Close drops the descriptors, deleting the ports (or their
// namespace) drops the attachments.
//
// A switch with ports holds no descriptors between calls: the filters on
// its ports hold the program, and the program its maps. Each call that
// needs them opens them again by id (BPF_*_GET_FD_BY_ID, a few
// microseconds) and closes them before it returns. A network of 10 000
// switches would otherwise hold 30 000 descriptors, beyond the open-file
// limit of many machines. A switch without ports holds its descriptors,
// which are then all that keeps its objects.
type Switch struct {
	name string

	mu     sync.Mutex
	fdb    int    // hash map: MAC -> port, time; -1 while released
	ports  int    // array map, one value: the port list, room for bound ports; -1 while released
	prog   int    // the program, its flood loop bounded by bound; -1 while released
	ids    objIDs // the three objects' ids, to open them again; zero before they are made
	bound  int    // the ports the list and the program have room for
	list   []Port // the ports, in attach order
	closed bool
}

// objIDs are the kernel's ids of a switch's maps and program.
type objIDs struct{ fdb, ports, prog uint32 }

// minBound is the smallest port room a switch grows to.
const minBound = 8

// initialBound is the port room of a new switch for its ports hint: just
// that (at least 1, at most MaxPorts). Each port of room costs the
// verifier about 50 µs at load (a 3-port switch loads in 0.20-0.25 ms
// with room for 3, 0.47-0.55 ms with room for 8), and a topology's
// switches get exactly the ports planned for them; one that gets more
// grows (boundFor).
func initialBound(ports int) int { return min(max(ports, 1), MaxPorts) }

// boundFor is the port room a switch grows to for n ports: a power of
// two, at least minBound, at most MaxPorts, so that ports added one by
// one reload the program only a few times.
func boundFor(n int) int {
	b := minBound
	for b < n && b < MaxPorts {
		b *= 2
	}
	return b
}

// Port is a port of a switch: its device's name and index in the switch's
// namespace.
type Port struct {
	Name    string
	Ifindex int
}

// New creates a switch (its maps and program) for Attach to add ports to.
// name names the kernel objects (bpftool shows it); ports is how many
// ports it will have, a hint: the verifier walks the flood loop once per
// possible port, so a switch loads a program for the ports it has, and a
// larger one (with a larger port list) when Attach needs more room.
func New(name string, ports int) (*Switch, error) {
	s, err := NewDeferred(name, ports)
	if err != nil {
		return nil, err
	}
	if err := s.Load(); err != nil {
		return nil, err
	}
	return s, nil
}

// NewDeferred is New without the kernel objects: they are made by Load or
// the first Attach. A network makes all its switches before their ports,
// and switches holding their descriptors until then would hold three
// each at once.
func NewDeferred(name string, ports int) (*Switch, error) {
	if ports > MaxPorts {
		return nil, fmt.Errorf("switch %s: %d ports: %w", name, ports, ErrTooManyPorts)
	}
	return &Switch{name: name, fdb: -1, ports: -1, prog: -1, bound: initialBound(ports)}, nil
}

// Load makes the switch's maps and program if they are not made yet (the
// verifier's work, outside any netlink lock the caller takes for Attach).
// The descriptors stay open until the next call that attaches a port.
func (s *Switch) Load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("bpf switch is closed")
	}
	return s.hold()
}

// hold opens the switch's descriptors: makes its objects the first time,
// opens them again by id after release. Objects that are gone (every
// port's device was deleted without Detach, so nothing held them) are
// made again, with an empty table.
func (s *Switch) hold() (err error) {
	if s.fdb >= 0 {
		return nil
	}
	if s.ids.fdb != 0 {
		err = s.reopen()
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("switch %s: %w", s.name, err)
		}
		s.ids = objIDs{}
	}
	defer func() {
		if err != nil {
			s.closeFDs()
		}
	}()
	if s.fdb, err = createMap(unix.BPF_MAP_TYPE_HASH, fdbKeySize, fdbValueSize, fdbEntries, unix.BPF_F_NO_PREALLOC, s.name+"_fdb"); err != nil {
		return err
	}
	if s.ports, s.prog, err = s.load(s.bound); err != nil {
		return err
	}
	if s.ids, err = s.objIDs(); err != nil {
		return err
	}
	if len(s.list) > 0 {
		return s.writePorts()
	}
	return nil
}

// reopen opens the objects by id.
func (s *Switch) reopen() error {
	var err error
	if s.fdb, err = objByID(unix.BPF_MAP_GET_FD_BY_ID, s.ids.fdb); err == nil {
		if s.ports, err = objByID(unix.BPF_MAP_GET_FD_BY_ID, s.ids.ports); err == nil {
			s.prog, err = objByID(unix.BPF_PROG_GET_FD_BY_ID, s.ids.prog)
		}
	}
	if err != nil {
		s.closeFDs()
		return fmt.Errorf("opening its BPF objects again: %w", err)
	}
	return nil
}

// objIDs reads the ids of the objects the descriptors hold.
func (s *Switch) objIDs() (objIDs, error) {
	var ids objIDs
	var err error
	if ids.fdb, err = objID(s.fdb); err == nil {
		if ids.ports, err = objID(s.ports); err == nil {
			ids.prog, err = objID(s.prog)
		}
	}
	if err != nil {
		return objIDs{}, fmt.Errorf("switch %s: reading its BPF objects' ids: %w", s.name, err)
	}
	return ids, nil
}

// release closes the descriptors of a switch with ports, whose filters
// hold its objects; one without ports keeps them (nothing else would).
func (s *Switch) release() {
	if len(s.list) > 0 {
		s.closeFDs()
	}
}

// closeFDs closes whichever descriptors are open.
func (s *Switch) closeFDs() {
	for _, fd := range []*int{&s.prog, &s.ports, &s.fdb} {
		if *fd >= 0 {
			_ = unix.Close(*fd) // nothing to report: the kernel drops the object with its last reference
			*fd = -1
		}
	}
}

// load makes a port list and a program for bound ports.
func (s *Switch) load(bound int) (ports, prog int, err error) {
	if ports, err = createMap(unix.BPF_MAP_TYPE_ARRAY, 4, uint32(4*bound), 1, 0, s.name+"_ports"); err != nil {
		return -1, -1, err
	}
	insns, err := program(s.fdb, ports, bound)
	if err == nil {
		prog, err = loadProgram(insns, "hymn_sw_"+s.name)
	}
	if err != nil {
		_ = unix.Close(ports) // a map's descriptor: closing cannot fail in a way that matters
		return -1, -1, fmt.Errorf("switch %s: %w", s.name, err)
	}
	return ports, prog, nil
}

// grow replaces the port list and the program by ones with room for
// bound ports, the program on every port too; the table stays.
func (s *Switch) grow(h *netlink.Handle, bound int) error {
	ports, prog, err := s.load(bound)
	if err != nil {
		return err
	}
	oldPorts, oldProg, oldBound := s.ports, s.prog, s.bound
	s.ports, s.prog, s.bound = ports, prog, bound
	err = s.writePorts()
	done := 0
	for _, p := range s.list {
		if err != nil {
			break
		}
		if err = s.setFilter(h, p.Name, p.Ifindex); err == nil {
			done++
		}
	}
	if err != nil {
		// Back to the old program wherever the new one went.
		s.ports, s.prog, s.bound = oldPorts, oldProg, oldBound
		for _, p := range s.list[:done] {
			if rerr := s.setFilter(h, p.Name, p.Ifindex); rerr != nil {
				err = errors.Join(err, fmt.Errorf("restoring the old program: %w", rerr))
			}
		}
		// BPF descriptors: a close cannot fail in a way that matters (a
		// program still attached keeps its own reference).
		_ = unix.Close(ports)
		_ = unix.Close(prog)
		return err
	}
	_ = unix.Close(oldPorts)
	_ = unix.Close(oldProg)
	ids, err := s.objIDs()
	if err != nil {
		return err
	}
	s.ids = ids
	return nil
}

// setFilter puts the program on a device's ingress, replacing what was
// there.
func (s *Switch) setFilter(h *netlink.Handle, intf string, idx int) error {
	filter := &netlink.BpfFilter{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: idx, Parent: netlink.HANDLE_MIN_INGRESS, Handle: 1,
			Protocol: unix.ETH_P_ALL, Priority: 1},
		Fd: s.prog, Name: "hymn_sw_" + s.name, DirectAction: true,
	}
	if err := h.FilterReplace(filter); err != nil {
		return fmt.Errorf("switch %s: port %s: BPF filter: %w", s.name, intf, err)
	}
	return nil
}

// Name returns the switch's name.
func (s *Switch) Name() string { return s.name }

// Attach makes the device intf (in the namespace of h) a port: a clsact
// qdisc with the program as a direct-action filter on its ingress, and an
// entry in the flood list. A device already attached under that name (one
// deleted and made again, say) takes its entry over, and what was learned
// on its old index is forgotten. Attach does not set the device up.
func (s *Switch) Attach(h *netlink.Handle, intf string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("bpf switch is closed")
	}
	link, err := h.LinkByName(intf)
	if err != nil {
		return err
	}
	if err := s.hold(); err != nil {
		return err
	}
	defer s.release()
	idx := link.Attrs().Index
	at := -1
	for i, p := range s.list {
		if p.Name == intf {
			at = i
		}
	}
	if at < 0 && len(s.list) >= MaxPorts {
		return fmt.Errorf("switch %s: port %s: %w", s.name, intf, ErrTooManyPorts)
	}
	if at < 0 && len(s.list) >= s.bound {
		if err := s.grow(h, boundFor(len(s.list)+1)); err != nil {
			return err
		}
	}
	qdisc := &netlink.GenericQdisc{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
		QdiscType:  "clsact",
	}
	if err := h.QdiscReplace(qdisc); err != nil {
		return fmt.Errorf("port %s: clsact qdisc: %w", intf, err)
	}
	if err := s.setFilter(h, intf, idx); err != nil {
		return err
	}
	var gone int
	if at >= 0 {
		gone = s.list[at].Ifindex
		s.list[at].Ifindex = idx
	} else {
		s.list = append(s.list, Port{Name: intf, Ifindex: idx})
	}
	if err := s.writePorts(); err != nil {
		return err
	}
	if gone != 0 && gone != idx {
		return s.forget(gone)
	}
	return nil
}

// Detach removes a port from the flood list and forgets what was learned
// on it; when its device still exists (in the namespace of h), its qdisc
// and with it the program go too. Detaching a port that is not attached
// does nothing.
func (s *Switch) Detach(h *netlink.Handle, intf string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	at := -1
	for i, p := range s.list {
		if p.Name == intf {
			at = i
		}
	}
	if at < 0 {
		return nil
	}
	if err := s.hold(); err != nil {
		return err
	}
	defer s.release()
	p := s.list[at]
	s.list = append(s.list[:at], s.list[at+1:]...)
	err := s.writePorts()
	if link, lerr := h.LinkByName(intf); lerr == nil && link.Attrs().Index == p.Ifindex {
		qdisc := &netlink.GenericQdisc{
			QdiscAttrs: netlink.QdiscAttrs{LinkIndex: p.Ifindex, Handle: netlink.MakeHandle(0xffff, 0), Parent: netlink.HANDLE_CLSACT},
			QdiscType:  "clsact",
		}
		if derr := h.QdiscDel(qdisc); derr != nil && !errors.Is(derr, unix.ENOENT) && !errors.Is(derr, unix.EINVAL) {
			err = errors.Join(err, fmt.Errorf("port %s: deleting its clsact qdisc: %w", intf, derr))
		}
	}
	return errors.Join(err, s.forget(p.Ifindex))
}

// Ports returns the attached ports in attach order.
func (s *Switch) Ports() []Port {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Port(nil), s.list...)
}

// writePorts writes the flood list: the ports' indexes, then zeros.
func (s *Switch) writePorts() error {
	buf := make([]byte, 4*s.bound)
	for i, p := range s.list {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(p.Ifindex))
	}
	var zero uint32
	if err := mapUpdate(s.ports, unsafe.Pointer(&zero), unsafe.Pointer(&buf[0])); err != nil {
		return fmt.Errorf("switch %s: writing the port list: %w", s.name, err)
	}
	return nil
}

// Entry is a learned address.
type Entry struct {
	MAC     net.HardwareAddr
	Ifindex int
	Age     time.Duration // since the last frame from it (to within a second)
}

// FDB returns the learning table, aged entries included (Age says so).
func (s *Switch) FDB() ([]Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("bpf switch is closed")
	}
	if len(s.list) == 0 && s.fdb < 0 {
		return nil, nil // never loaded: nothing learned
	}
	if err := s.hold(); err != nil {
		return nil, err
	}
	defer s.release()
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil { // bpf_ktime_get_ns's clock
		return nil, err
	}
	var out []Entry
	err := s.walk(func(key [8]byte, port int, stamp uint64) {
		age := time.Duration(now.Nano() - int64(stamp))
		out = append(out, Entry{MAC: net.HardwareAddr(append([]byte(nil), key[:6]...)), Ifindex: port, Age: max(age, 0)})
	})
	return out, err
}

// forget deletes the entries learned on a port.
func (s *Switch) forget(ifindex int) error {
	var stale [][8]byte
	if err := s.walk(func(key [8]byte, port int, _ uint64) {
		if port == ifindex {
			stale = append(stale, key)
		}
	}); err != nil {
		return err
	}
	for _, k := range stale {
		if err := mapDelete(s.fdb, unsafe.Pointer(&k)); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("switch %s: forgetting an address: %w", s.name, err)
		}
	}
	return nil
}

// routerKey is the fdb key of the router record (prog.go): all zeros,
// which no learned source can be (the program drops such frames).
var routerKey [8]byte

// SawRouter reports whether the switch has seen an IPv6 router (a router
// advertisement, an MLD query or PIM): only then do the hosts' router
// solicitations and MLD reports cross it.
func (s *Switch) SawRouter() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, errors.New("bpf switch is closed")
	}
	if len(s.list) == 0 && s.fdb < 0 {
		return false, nil // never loaded: nothing seen
	}
	if err := s.hold(); err != nil {
		return false, err
	}
	defer s.release()
	key := routerKey
	var val [fdbValueSize]byte
	err := mapLookup(s.fdb, unsafe.Pointer(&key), unsafe.Pointer(&val))
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("switch %s: reading the table: %w", s.name, err)
	}
	return true, nil
}

// walk calls fn for each entry of the table; entries the program adds or
// deletes meanwhile may be missed.
func (s *Switch) walk(fn func(key [8]byte, port int, stamp uint64)) error {
	var key, next [8]byte
	var val [fdbValueSize]byte
	first := true
	for {
		var kp unsafe.Pointer
		if !first {
			kp = unsafe.Pointer(&key)
		}
		ok, err := mapNextKey(s.fdb, kp, unsafe.Pointer(&next))
		if err != nil {
			return fmt.Errorf("switch %s: reading the table: %w", s.name, err)
		}
		if !ok {
			return nil
		}
		first, key = false, next
		if err := mapLookup(s.fdb, unsafe.Pointer(&key), unsafe.Pointer(&val)); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // deleted meanwhile
			}
			return fmt.Errorf("switch %s: reading the table: %w", s.name, err)
		}
		if key == routerKey {
			continue // not an address: the program's router record
		}
		fn(key, int(binary.LittleEndian.Uint32(val[0:])), binary.LittleEndian.Uint64(val[8:]))
	}
}

// Close drops the switch's descriptors. The program keeps running on
// ports still attached (holding the maps) until their devices go.
func (s *Switch) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.closeFDs()
	return nil
}
