package sriov

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/linkparams"
)

// SimMode says when the simulated NIC stands in for hardware.
type SimMode string

// Simulation modes.
const (
	SimAuto   SimMode = "auto" // hardware if there is any, else the simulated NIC (with a notice)
	SimAlways SimMode = "on"   // always the simulated NIC
	SimNever  SimMode = "off"  // hardware or an error
)

// Config configures the SR-IOV link backend of a network.
type Config struct {
	Inventory string  // inventory YAML file; "" for none
	Cables    []Cable // cables from flags; they replace the file's cables
	VLANs     string  // VLAN range(s); "" for the file's or DefaultVLANs
	Simulate  SimMode // "" means SimAuto
	SysRoot   string  // sysfs root; "" means /sys
	SimVFs    int     // VFs per simulated PF; 0 sizes the NIC to the topology
	// Emulator picks the ports of emulated VF links (emulator=): ""
	// or linkparams.PortsAFPacket for hymn's AF_PACKET ports on the VF
	// netdevs, linkparams.PortsDPDK for DPDK ports (net_af_packet vdevs
	// on the simulated NIC's VFs, the VF's own poll-mode driver under
	// vfio-pci on hardware). A link's own emulator= parameter wins.
	Emulator string
	// Conf replaces netlink for the settings of real VFs (tests that
	// run the hardware path on a fake sysfs; drivers with quirks).
	Conf Configurator `json:"-"`
}

// ParseOptions reads the SR-IOV options of a --links value, the part
// after "sriov,": comma-separated key=value pairs with keys pairs (A:B,
// several joined by '+'), vlans, inventory, sim (auto|on|off), vfs, sysfs
// and emulator (afpacket|dpdk, the ports of emulated VF links), in the
// style of Mininet's --link tc,delay=10ms. The backend word itself is the
// root package's (hymn.ParseLinkBackend).
func ParseOptions(opts string) (Config, error) {
	var cfg Config
	if strings.TrimSpace(opts) == "" {
		return cfg, nil
	}
	for _, kv := range strings.Split(opts, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return cfg, fmt.Errorf("%q is not key=value", kv)
		}
		if err := cfg.Set(k, v); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// Set sets one option by its spec key.
func (c *Config) Set(k, v string) error {
	switch k {
	case "pairs", "pair", "cables":
		cs, err := ParseCables(v)
		if err != nil {
			return err
		}
		c.Cables = append(c.Cables, cs...)
	case "vlans", "vlan":
		if _, err := ParseVLANRanges(v); err != nil {
			return err
		}
		c.VLANs = v
	case "inventory":
		c.Inventory = v
	case "sim", "simulate":
		switch SimMode(v) {
		case SimAuto, SimAlways, SimNever:
			c.Simulate = SimMode(v)
		default:
			return fmt.Errorf("sim=%s: use auto, on or off", v)
		}
	case "vfs":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("vfs=%s: not a positive number", v)
		}
		if n > MaxVFs {
			return fmt.Errorf("vfs=%s: at most %d VFs per PF (the most SR-IOV NICs offer)", v, MaxVFs)
		}
		c.SimVFs = n
	case "sysfs":
		if !strings.HasPrefix(v, "/") {
			return fmt.Errorf("sysfs=%s: must be an absolute path", v)
		}
		c.SysRoot = v
	case linkparams.PortsKey:
		ports, err := linkparams.ParsePorts(v)
		if err != nil {
			return err
		}
		c.Emulator = ports
	default:
		return fmt.Errorf("unknown SR-IOV option %q (use pairs, vlans, inventory, sim, vfs, sysfs, emulator)", k)
	}
	return nil
}

// MaxVFs bounds vfs= (VFs per simulated PF): 256 is the most current
// SR-IOV NICs offer per port, and each simulated VF is a veth pair.
const MaxVFs = 256

// Merge returns c with the options set in o added (o wins).
func (c Config) Merge(o Config) Config {
	if o.Inventory != "" {
		c.Inventory = o.Inventory
	}
	if len(o.Cables) > 0 {
		c.Cables = o.Cables
	}
	if o.VLANs != "" {
		c.VLANs = o.VLANs
	}
	if o.Simulate != "" {
		c.Simulate = o.Simulate
	}
	if o.SysRoot != "" {
		c.SysRoot = o.SysRoot
	}
	if o.SimVFs != 0 {
		c.SimVFs = o.SimVFs
	}
	if o.Emulator != "" {
		c.Emulator = o.Emulator
	}
	if o.Conf != nil {
		c.Conf = o.Conf
	}
	return c
}

// Mode returns the simulation mode, SimAuto when unset.
func (c Config) Mode() SimMode {
	if c.Simulate == "" {
		return SimAuto
	}
	return c.Simulate
}

// LoadInventory builds the inventory: the file if any, with cables and
// VLANs from flags replacing the file's. It may have no cables (the
// simulated NIC brings its own).
func (c Config) LoadInventory() (*Inventory, error) {
	inv := &Inventory{}
	if c.Inventory != "" {
		var err error
		if inv, err = LoadInventory(c.Inventory); err != nil {
			return nil, err
		}
	}
	if len(c.Cables) > 0 {
		inv.Cables = c.Cables
	}
	if c.VLANs != "" {
		inv.VLANs = c.VLANs
	}
	if err := inv.check(); err != nil {
		return nil, err
	}
	return inv, nil
}
