//go:build dpdk

package dpdk

/*
#cgo pkg-config: libdpdk
#cgo LDFLAGS: -lrte_net_ring -lrte_bus_vdev
#include <stdlib.h>
#include <string.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_bus_vdev.h>
#include <rte_ring.h>
#include <rte_eth_ring.h>
#include <rte_dev.h>

// The burst functions are static inline: cgo cannot call them, so these
// wrappers do, one call per burst. Frames move between mbufs and a
// C-allocated staging area (stride bytes per frame), so Go memory is never
// handed to DPDK.

static uint16_t hymn_rx(uint16_t port, struct rte_mbuf **tmp, uint16_t n,
		unsigned char *stage, uint32_t stride, uint32_t *lens, uint32_t *trunc) {
	uint16_t got = rte_eth_rx_burst(port, 0, tmp, n);
	uint16_t out = 0;
	*trunc = 0;
	for (uint16_t i = 0; i < got; i++) {
		struct rte_mbuf *m = tmp[i];
		uint32_t len = rte_pktmbuf_pkt_len(m);
		if (len > stride || m->nb_segs != 1) {
			// A cut or chained frame would need a gather copy; the
			// emulator's contract is to drop and count it.
			(*trunc)++;
			continue;
		}
		memcpy(stage + (size_t)out * stride, rte_pktmbuf_mtod(m, void *), len);
		lens[out++] = len;
	}
	if (got > 0)
		rte_pktmbuf_free_bulk(tmp, got);
	return out;
}

static uint16_t hymn_tx(uint16_t port, struct rte_mempool *pool, struct rte_mbuf **tmp, uint16_t n,
		unsigned char *stage, uint32_t stride, uint32_t *lens) {
	if (n == 0 || rte_pktmbuf_alloc_bulk(pool, tmp, n) != 0)
		return 0;
	for (uint16_t i = 0; i < n; i++) {
		char *p = rte_pktmbuf_append(tmp[i], lens[i]);
		if (p == NULL) {
			rte_pktmbuf_free_bulk(tmp, n);
			return 0;
		}
		memcpy(p, stage + (size_t)i * stride, lens[i]);
	}
	uint16_t sent = rte_eth_tx_burst(port, 0, tmp, n);
	if (sent < n)
		rte_pktmbuf_free_bulk(tmp + sent, n - sent);
	return sent;
}

static int hymn_port_setup(uint16_t port, struct rte_mempool *pool, uint16_t rxd, uint16_t txd) {
	struct rte_eth_conf conf;
	memset(&conf, 0, sizeof conf);
	int rc = rte_eth_dev_configure(port, 1, 1, &conf);
	if (rc < 0)
		return rc;
	int socket = rte_eth_dev_socket_id(port);
	if (socket < 0)
		socket = 0;
	rc = rte_eth_rx_queue_setup(port, 0, rxd, socket, NULL, pool);
	if (rc < 0)
		return rc;
	rc = rte_eth_tx_queue_setup(port, 0, txd, socket, NULL);
	if (rc < 0)
		return rc;
	rc = rte_eth_dev_start(port);
	if (rc < 0)
		return rc;
	// A port stands in for a wire: it must take every frame.
	rte_eth_promiscuous_enable(port);
	return 0;
}

static int hymn_errno(void) { return rte_errno; }

// hymn_wire makes two ring ethdevs joined like the ends of a cable: what
// one sends, the other receives.
static int hymn_wire(const char *a, const char *b, const char *ring_ab, const char *ring_ba, int *ida, int *idb) {
	struct rte_ring *ab = rte_ring_create(ring_ab, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	struct rte_ring *ba = rte_ring_create(ring_ba, 1024, SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (ab == NULL || ba == NULL)
		return -rte_errno;
	*ida = rte_eth_from_rings(a, &ba, 1, &ab, 1, SOCKET_ID_ANY);
	if (*ida < 0)
		return -rte_errno;
	*idb = rte_eth_from_rings(b, &ab, 1, &ba, 1, SOCKET_ID_ANY);
	if (*idb < 0)
		return -rte_errno;
	return 0;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// defaults fills in what the caller left zero (only the cgo build uses
// Options; the stub refuses before it looks at them).
func (o *Options) defaults() {
	if o.MaxFrame <= 0 {
		o.MaxFrame = 1522
	}
	if o.RxDesc <= 0 {
		o.RxDesc = 1024
	}
	if o.TxDesc <= 0 {
		o.TxDesc = 1024
	}
	if o.Burst <= 0 {
		o.Burst = 32
	}
	if o.IdleSleep > 0 {
		if o.DeepIdleSleep <= 0 {
			o.DeepIdleSleep = max(time.Millisecond, o.IdleSleep)
		}
		if o.DeepIdleAfter <= 0 {
			o.DeepIdleAfter = 10 * time.Millisecond
		}
	}
}

// Built reports whether this binary has DPDK (the dpdk build tag).
const Built = true

var (
	ealMu    sync.Mutex
	ealReady bool
	ealErr   error
	ealCfg   Config // what the running EAL was started with
	pool     *C.struct_rte_mempool
)

// Started reports whether the EAL runs in this process and the Config it
// was started with (PCI empty: started with --no-pci).
func Started() (Config, bool) {
	ealMu.Lock()
	defer ealMu.Unlock()
	return ealCfg, ealReady
}

// Init starts the EAL once per process. Later calls return the first
// call's result, whatever their Config.
func Init(cfg Config) error {
	ealMu.Lock()
	defer ealMu.Unlock()
	if ealReady || ealErr != nil {
		return ealErr
	}
	ealErr = initEAL(cfg)
	ealReady = ealErr == nil
	if ealReady {
		ealCfg = cfg
	}
	return ealErr
}

func initEAL(cfg Config) error {
	args := append([]string{"hymn"}, cfg.Args(runtime.NumCPU())...)
	// EAL may keep pointers into argv, so it is never freed.
	argv := (**C.char)(C.malloc(C.size_t(len(args)+1) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	av := unsafe.Slice(argv, len(args)+1)
	for i, a := range args {
		av[i] = C.CString(a)
	}
	av[len(args)] = nil
	// EAL treats the calling thread as its main lcore.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if rc := C.rte_eal_init(C.int(len(args)), argv); rc < 0 {
		// Best effort: the init's failure is the error to report.
		_ = os.RemoveAll(filepath.Join(RunDir, FilePrefix()))
		_ = os.RemoveAll(filepath.Join(RunDir, "rte")) // a failed parse creates it
		return fmt.Errorf("DPDK EAL init (%v): %s", args[1:], C.GoString(C.rte_strerror(C.hymn_errno())))
	}
	name := C.CString("hymn_pool")
	defer C.free(unsafe.Pointer(name))
	pool = C.rte_pktmbuf_pool_create(name, 8191, 256, 0, C.RTE_MBUF_DEFAULT_BUF_SIZE, C.int(C.rte_socket_id()))
	if pool == nil {
		C.rte_eal_cleanup()
		_ = os.RemoveAll(filepath.Join(RunDir, FilePrefix())) // best effort, as above
		return fmt.Errorf("DPDK mbuf pool: %s", C.GoString(C.rte_strerror(C.hymn_errno())))
	}
	return nil
}

// Cleanup ends the EAL and removes its runtime directory. Ports must be
// closed first. The EAL cannot be started again in the same process.
func Cleanup() error {
	ealMu.Lock()
	defer ealMu.Unlock()
	if !ealReady {
		return nil
	}
	ealReady = false
	ealErr = errors.New("DPDK EAL was cleaned up; it cannot start twice in one process")
	var errs []error
	if rc := C.rte_eal_cleanup(); rc < 0 {
		errs = append(errs, fmt.Errorf("rte_eal_cleanup: %d", int(rc)))
	}
	errs = append(errs, os.RemoveAll(filepath.Join(RunDir, FilePrefix())))
	_ = os.Remove(RunDir) // only if empty: other DPDK programs may use it
	return errors.Join(errs...)
}

// CreateVdev creates a virtual device (net_ring0, net_null1,
// net_af_packet0 with args "iface=d1", ...) in the running EAL.
func CreateVdev(name, args string) error {
	if err := ready(); err != nil {
		return err
	}
	cn, ca := C.CString(name), C.CString(args)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(ca))
	if rc := C.rte_vdev_init(cn, ca); rc < 0 {
		return fmt.Errorf("DPDK vdev %s (%s): %s", name, args, C.GoString(C.rte_strerror(-rc)))
	}
	return nil
}

var (
	wires     atomic.Int32
	wireMu    sync.Mutex
	wirePorts = map[string]C.uint16_t{} // ring ethdevs by the name CreateWire gave them
)

// CreateWire creates two ethdevs named a and b (they must start with
// "net_ring", the driver's name) joined by a pair of rings: frames sent on
// one are received on the other. It stands in for a cable in tests and
// for links between emulators in one DPDK process.
func CreateWire(a, b string) error {
	if err := ready(); err != nil {
		return err
	}
	i := wires.Add(1)
	ca, cb := C.CString(a), C.CString(b)
	rab, rba := C.CString(fmt.Sprintf("hw%dab", i)), C.CString(fmt.Sprintf("hw%dba", i))
	defer func() {
		for _, p := range []*C.char{ca, cb, rab, rba} {
			C.free(unsafe.Pointer(p))
		}
	}()
	var ida, idb C.int
	if rc := C.hymn_wire(ca, cb, rab, rba, &ida, &idb); rc < 0 {
		return fmt.Errorf("DPDK wire %s<->%s: %s", a, b, C.GoString(C.rte_strerror(-rc)))
	}
	wireMu.Lock()
	wirePorts[a], wirePorts[b] = C.uint16_t(ida), C.uint16_t(idb)
	wireMu.Unlock()
	return nil
}

// RemoveVdev removes a virtual device (close its port first).
func RemoveVdev(name string) error {
	if err := ready(); err != nil {
		return err
	}
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	if rc := C.rte_vdev_uninit(cn); rc < 0 {
		return fmt.Errorf("DPDK vdev %s: removing: %s", name, C.GoString(C.rte_strerror(-rc)))
	}
	return nil
}

// AttachPCI probes a PCI device (a VF bound to vfio-pci, by its address)
// in the running EAL, which must have been started with PCI (Config.PCI
// not empty); its port is then opened by the address. args are the PMD's
// device arguments ("" for none). A device the EAL probed at start is
// attached already.
func AttachPCI(addr, args string) error {
	if err := ready(); err != nil {
		return err
	}
	if cfg, _ := Started(); len(cfg.PCI) == 0 {
		return fmt.Errorf("DPDK device %s: this process's EAL was started with --no-pci (for virtual devices); PCI devices need a process whose first DPDK use is hardware", addr)
	}
	bus, ca, cargs := C.CString("pci"), C.CString(addr), C.CString(args)
	defer func() {
		for _, p := range []*C.char{bus, ca, cargs} {
			C.free(unsafe.Pointer(p))
		}
	}()
	if rc := C.rte_eal_hotplug_add(bus, ca, cargs); rc < 0 {
		return fmt.Errorf("DPDK device %s: attaching: %s", addr, C.GoString(C.rte_strerror(-rc)))
	}
	return nil
}

// DetachPCI removes a PCI device from the EAL (close its port first), so
// vfio-pci lets it go and it can return to its kernel driver.
func DetachPCI(addr string) error {
	if err := ready(); err != nil {
		return err
	}
	bus, ca := C.CString("pci"), C.CString(addr)
	defer C.free(unsafe.Pointer(bus))
	defer C.free(unsafe.Pointer(ca))
	if rc := C.rte_eal_hotplug_remove(bus, ca); rc < 0 {
		return fmt.Errorf("DPDK device %s: detaching: %s", addr, C.GoString(C.rte_strerror(-rc)))
	}
	return nil
}

// Devices lists the names of the ethdevs that exist in this process's
// EAL (nil when it does not run), so tests can check that closed links
// left none behind.
func Devices() []string {
	if ready() != nil {
		return nil
	}
	var out []string
	buf := (*C.char)(C.calloc(C.RTE_ETH_NAME_MAX_LEN, 1))
	defer C.free(unsafe.Pointer(buf))
	for id := C.uint16_t(0); id < C.RTE_MAX_ETHPORTS; id++ {
		if C.rte_eth_dev_is_valid_port(id) == 0 {
			continue
		}
		if C.rte_eth_dev_get_name_by_port(id, buf) == 0 {
			out = append(out, C.GoString(buf))
		}
	}
	return out
}

func ready() error {
	ealMu.Lock()
	defer ealMu.Unlock()
	if !ealReady {
		if ealErr != nil {
			return ealErr
		}
		return errors.New("DPDK EAL is not initialised (call dpdk.Init)")
	}
	return nil
}

// Port is an emulator.Port on a DPDK ethdev with one RX and one TX
// queue. Its queues are polled: Wait returns at once and the forwarder
// paces itself.
type Port struct {
	name   string
	id     C.uint16_t
	burst  int
	stride int
	idle   time.Duration
	// Deep idle (Options.DeepIdleSleep): lastRx is when RecvBatch last
	// returned frames; only the receiving goroutine touches it.
	deepIdle, deepAfter time.Duration
	lastRx              time.Time
	ns                  netns.NsHandle // where the PMD's kernel interface lives; -1: here

	rxStage, txStage *C.uchar
	rxLens, txLens   *C.uint32_t
	rxTmp, txTmp     **C.struct_rte_mbuf
	rxTrunc          *C.uint32_t

	closed atomic.Bool
	mu     sync.Mutex // Close against the two user goroutines' calls

	rxFrames, rxBytes, rxTruncated atomic.Uint64
	txFrames, txBytes, txDropped   atomic.Uint64
}

var _ emulator.Port = (*Port)(nil)

// Open starts the ethdev called name: a vdev name (net_ring0) or a PCI
// address of a VF bound to vfio-pci (0000:21:02.0, which needs an EAL
// started with PCI: listed in Config.PCI, or attached with AttachPCI).
func Open(name string, o Options) (*Port, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	o.defaults()
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	wireMu.Lock()
	id, ok := wirePorts[name]
	wireMu.Unlock()
	// A ring device made from existing rings is registered under a name
	// of the driver's choosing; CreateWire kept its port id.
	if !ok {
		if rc := C.rte_eth_dev_get_port_by_name(cn, &id); rc < 0 {
			return nil, fmt.Errorf("DPDK port %s: no such device (create it with CreateVdev or --vdev): %s", name, C.GoString(C.rte_strerror(-rc)))
		}
	}
	if rc := C.hymn_port_setup(id, pool, C.uint16_t(o.RxDesc), C.uint16_t(o.TxDesc)); rc < 0 {
		return nil, fmt.Errorf("DPDK port %s: setup: %s", name, C.GoString(C.rte_strerror(-rc)))
	}
	p := &Port{name: name, id: id, burst: o.Burst, stride: o.MaxFrame, idle: o.IdleSleep,
		deepIdle: o.DeepIdleSleep, deepAfter: o.DeepIdleAfter, lastRx: time.Now(), ns: -1}
	cmalloc := func(n int) unsafe.Pointer { return C.calloc(C.size_t(n), 1) }
	p.rxStage = (*C.uchar)(cmalloc(o.Burst * o.MaxFrame))
	p.txStage = (*C.uchar)(cmalloc(o.Burst * o.MaxFrame))
	p.rxLens = (*C.uint32_t)(cmalloc(o.Burst * 4))
	p.txLens = (*C.uint32_t)(cmalloc(o.Burst * 4))
	p.rxTmp = (**C.struct_rte_mbuf)(cmalloc(o.Burst * 8))
	p.txTmp = (**C.struct_rte_mbuf)(cmalloc(o.Burst * 8))
	p.rxTrunc = (*C.uint32_t)(cmalloc(4))
	return p, nil
}

// OpenIn opens a port whose driver works on a kernel interface of another
// network namespace (net_af_packet, net_af_xdp): such drivers set flags
// with ioctls in the namespace of the calling thread when the port starts
// and stops, so those calls run inside ns. Create the vdev there too
// (CreateVdevIn).
func OpenIn(ns netns.NsHandle, name string, o Options) (*Port, error) {
	var p *Port
	err := netnsx.Do(ns, func() error {
		var err error
		p, err = Open(name, o)
		return err
	})
	if err != nil {
		return nil, err
	}
	dup, err := unix.Dup(int(ns))
	if err != nil {
		_ = p.Close() // best effort: the dup's failure is the error to report
		return nil, err
	}
	p.ns = netns.NsHandle(dup)
	return p, nil
}

// CreateVdevIn creates a vdev from inside ns, where a driver that opens
// kernel sockets (net_af_packet's iface=) finds its interface.
func CreateVdevIn(ns netns.NsHandle, name, args string) error {
	return netnsx.Do(ns, func() error { return CreateVdev(name, args) })
}

// Name implements emulator.Port.
func (p *Port) Name() string { return p.name }

// RecvBatch implements emulator.Port: one rx burst, copied out. DPDK's
// virtual devices have no receive time stamps, so stamps are 0.
func (p *Port) RecvBatch(bufs [][]byte, lens []int, stamps []int64) (int, error) {
	if p.closed.Load() {
		return 0, emulator.ErrPortClosed
	}
	want := min(len(bufs), p.burst)
	if want == 0 {
		return 0, nil
	}
	got := int(C.hymn_rx(p.id, p.rxTmp, C.uint16_t(want), p.rxStage, C.uint32_t(p.stride), p.rxLens, p.rxTrunc))
	stage := unsafe.Slice((*byte)(unsafe.Pointer(p.rxStage)), p.burst*p.stride)
	cl := unsafe.Slice((*uint32)(unsafe.Pointer(p.rxLens)), p.burst)
	n, bytes := 0, uint64(0)
	trunc := uint64(*p.rxTrunc)
	for i := 0; i < got; i++ {
		l := int(cl[i])
		if l > len(bufs[n]) {
			trunc++
			continue
		}
		copy(bufs[n], stage[i*p.stride:i*p.stride+l])
		lens[n] = l
		if n < len(stamps) {
			stamps[n] = 0
		}
		bytes += uint64(l)
		n++
	}
	if got > 0 && p.deepAfter > 0 {
		p.lastRx = time.Now()
	}
	p.rxFrames.Add(uint64(n))
	p.rxBytes.Add(bytes)
	if trunc > 0 {
		p.rxTruncated.Add(trunc)
	}
	return n, nil
}

// SendBatch implements emulator.Port, a tx burst per Burst frames.
func (p *Port) SendBatch(frames [][]byte) (int, error) {
	if p.closed.Load() {
		return 0, emulator.ErrPortClosed
	}
	stage := unsafe.Slice((*byte)(unsafe.Pointer(p.txStage)), p.burst*p.stride)
	cl := unsafe.Slice((*uint32)(unsafe.Pointer(p.txLens)), p.burst)
	sent := 0
	var bytes, dropped uint64
	for len(frames) > 0 {
		k := 0
		for k < p.burst && len(frames) > 0 {
			f := frames[0]
			frames = frames[1:]
			if len(f) > p.stride {
				dropped++
				continue
			}
			copy(stage[k*p.stride:], f)
			cl[k] = uint32(len(f))
			k++
		}
		s := int(C.hymn_tx(p.id, pool, p.txTmp, C.uint16_t(k), p.txStage, C.uint32_t(p.stride), p.txLens))
		for i := 0; i < s; i++ {
			bytes += uint64(cl[i])
		}
		sent += s
		dropped += uint64(k - s)
	}
	p.txFrames.Add(uint64(sent))
	p.txBytes.Add(bytes)
	if dropped > 0 {
		p.txDropped.Add(dropped)
	}
	return sent, nil
}

// Wait implements emulator.Port. A polled queue cannot block: Wait
// returns at once, or, with Options.IdleSleep, after sleeping that long
// (DeepIdleSleep on a link quiet for DeepIdleAfter; at most timeout), so
// an idle link does not spin a core.
func (p *Port) Wait(timeout time.Duration) error {
	if p.closed.Load() {
		return emulator.ErrPortClosed
	}
	if d := p.idle; d > 0 {
		if p.deepAfter > 0 && time.Since(p.lastRx) > p.deepAfter {
			d = p.deepIdle
		}
		if timeout >= 0 && timeout < d {
			d = timeout
		}
		// A nanosleep, not time.Sleep: the runtime's timers may wake
		// the forwarder's locked thread a millisecond late, and a frame
		// waiting in a polled queue is only stamped when it is read.
		emulator.ThreadSleep(d)
	}
	return nil
}

// Interrupt implements emulator.Port (nothing to interrupt).
func (p *Port) Interrupt() {}

// Stats implements emulator.Port; RxRingDrops is the device's imissed,
// TxFailed its oerrors.
func (p *Port) Stats() emulator.PortStats {
	st := emulator.PortStats{RxFrames: p.rxFrames.Load(), RxBytes: p.rxBytes.Load(), RxTruncated: p.rxTruncated.Load(),
		TxFrames: p.txFrames.Load(), TxBytes: p.txBytes.Load(), TxDropped: p.txDropped.Load()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed.Load() {
		var es C.struct_rte_eth_stats
		if C.rte_eth_stats_get(p.id, &es) == 0 {
			st.RxRingDrops = uint64(es.imissed)
			st.TxFailed = uint64(es.oerrors)
		}
	}
	return st
}

// Close stops and closes the device and frees the staging memory. The
// forwarder must have stopped using the port.
func (p *Port) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Swap(true) {
		return nil
	}
	stop := func() error {
		var err error
		if rc := C.rte_eth_dev_stop(p.id); rc < 0 {
			err = fmt.Errorf("DPDK port %s: stop: %s", p.name, C.GoString(C.rte_strerror(-rc)))
		}
		C.rte_eth_dev_close(p.id)
		return err
	}
	var err error
	if p.ns >= 0 {
		err = netnsx.Do(p.ns, stop)
		_ = p.ns.Close() // our own dup of the namespace descriptor: nothing to report
	} else {
		err = stop()
	}
	for _, m := range []unsafe.Pointer{unsafe.Pointer(p.rxStage), unsafe.Pointer(p.txStage), unsafe.Pointer(p.rxLens),
		unsafe.Pointer(p.txLens), unsafe.Pointer(p.rxTmp), unsafe.Pointer(p.txTmp), unsafe.Pointer(p.rxTrunc)} {
		C.free(m)
	}
	return err
}
