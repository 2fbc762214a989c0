//go:build !dpdk

package dpdk

import (
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/vishvananda/netns"
)

// Built reports whether this binary has DPDK: not without the dpdk build tag.
const Built = false

// Init reports ErrNotBuilt.
func Init(Config) error { return ErrNotBuilt }

// Cleanup does nothing without DPDK.
func Cleanup() error { return nil }

// CreateVdev reports ErrNotBuilt.
func CreateVdev(name, args string) error { return ErrNotBuilt }

// CreateWire reports ErrNotBuilt.
func CreateWire(a, b string) error { return ErrNotBuilt }

// RemoveVdev reports ErrNotBuilt.
func RemoveVdev(name string) error { return ErrNotBuilt }

// Started reports that no EAL runs.
func Started() (Config, bool) { return Config{}, false }

// Devices lists no devices.
func Devices() []string { return nil }

// AttachPCI reports ErrNotBuilt.
func AttachPCI(addr, args string) error { return ErrNotBuilt }

// DetachPCI reports ErrNotBuilt.
func DetachPCI(addr string) error { return ErrNotBuilt }

// Port is a DPDK ethdev port; without DPDK it cannot be opened.
type Port struct{}

var _ emulator.Port = (*Port)(nil)

// Open reports ErrNotBuilt.
func Open(name string, o Options) (*Port, error) { return nil, ErrNotBuilt }

// OpenIn reports ErrNotBuilt.
func OpenIn(ns netns.NsHandle, name string, o Options) (*Port, error) { return nil, ErrNotBuilt }

// CreateVdevIn reports ErrNotBuilt.
func CreateVdevIn(ns netns.NsHandle, name, args string) error { return ErrNotBuilt }

// Name implements emulator.Port.
func (*Port) Name() string { return "" }

// RecvBatch implements emulator.Port.
func (*Port) RecvBatch([][]byte, []int, []int64) (int, error) { return 0, ErrNotBuilt }

// SendBatch implements emulator.Port.
func (*Port) SendBatch([][]byte) (int, error) { return 0, ErrNotBuilt }

// Wait implements emulator.Port.
func (*Port) Wait(time.Duration) error { return ErrNotBuilt }

// Interrupt implements emulator.Port.
func (*Port) Interrupt() {}

// Stats implements emulator.Port.
func (*Port) Stats() emulator.PortStats { return emulator.PortStats{} }

// Close implements emulator.Port.
func (*Port) Close() error { return nil }
