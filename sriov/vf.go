package sriov

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"

	"github.com/vishvananda/netlink"
)

// LinkState is a VF's administrative link state as the PF reports it
// (IFLA_VF_LINK_STATE).
type LinkState uint32

// Link states, with the kernel's values.
const (
	LinkAuto    = LinkState(netlink.VF_LINK_STATE_AUTO)    // follow the PF's link
	LinkEnable  = LinkState(netlink.VF_LINK_STATE_ENABLE)  // always up
	LinkDisable = LinkState(netlink.VF_LINK_STATE_DISABLE) // always down
)

func (s LinkState) String() string {
	switch s {
	case LinkAuto:
		return "auto"
	case LinkEnable:
		return "enable"
	case LinkDisable:
		return "disable"
	}
	return fmt.Sprintf("state(%d)", uint32(s))
}

// MarshalText writes the state's name (for JSON and YAML).
func (s LinkState) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a state's name.
func (s *LinkState) UnmarshalText(b []byte) error {
	switch string(b) {
	case "auto":
		*s = LinkAuto
	case "enable":
		*s = LinkEnable
	case "disable":
		*s = LinkDisable
	default:
		return fmt.Errorf("VF link state %q: use auto, enable or disable", b)
	}
	return nil
}

// VFState is what the PF knows about one VF: the settings `ip link set
// <pf> vf <i> ...` changes.
type VFState struct {
	VLAN      int              `json:"vlan"` // port VLAN; 0 for none
	QoS       int              `json:"qos,omitempty"`
	MAC       net.HardwareAddr `json:"-"` // administrative MAC; nil or zero for none
	SpoofChk  bool             `json:"spoofchk"`
	Trust     bool             `json:"trust"`
	LinkState LinkState        `json:"link_state"`
}

// MACString is the MAC in text form ("" for none), for output and state
// files (net.HardwareAddr has no text marshalling of its own).
func (s VFState) MACString() string {
	if !hasMAC(s.MAC) {
		return ""
	}
	return s.MAC.String()
}

// MarshalJSON writes the MAC as text, so state files can restore it.
func (s VFState) MarshalJSON() ([]byte, error) {
	type plain VFState
	return json.Marshal(struct {
		plain
		MAC string `json:"mac,omitempty"`
	}{plain(s), s.MACString()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *VFState) UnmarshalJSON(b []byte) error {
	type plain VFState
	var v struct {
		plain
		MAC string `json:"mac,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = VFState(v.plain)
	if v.MAC != "" {
		mac, err := net.ParseMAC(v.MAC)
		if err != nil {
			return err
		}
		s.MAC = mac
	}
	return nil
}

func hasMAC(m net.HardwareAddr) bool {
	return len(m) > 0 && !bytes.Equal(m, make([]byte, len(m)))
}

// Foreign reports whether a VF carries settings that someone configured:
// a port VLAN or an administrative MAC. hymn never takes such a VF, since
// it may be a load generator's port or another run's link.
func (s VFState) Foreign() bool { return s.VLAN != 0 || hasMAC(s.MAC) }

// Configurator reads and changes VF settings through the PF. The netlink
// implementation talks to the driver; MemConfigurator keeps the settings
// in memory (tests, the simulated NIC).
type Configurator interface {
	GetVF(pf string, vf int) (VFState, error)
	// SetVF applies every field of st. A nil or zero MAC leaves the MAC
	// alone unless the VF has one, in which case it is cleared.
	SetVF(pf string, vf int, st VFState) error
}

// NetlinkConfigurator configures VFs of PFs in the caller's network
// namespace through rtnetlink, like `ip link set <pf> vf <i> ...`.
type NetlinkConfigurator struct{}

// GetVF reads IFLA_VFINFO_LIST of the PF.
func (NetlinkConfigurator) GetVF(pf string, vf int) (VFState, error) {
	link, err := netlink.LinkByName(pf)
	if err != nil {
		return VFState{}, fmt.Errorf("%w: %s: %v", ErrUnknownPF, pf, err)
	}
	for _, v := range link.Attrs().Vfs {
		if v.ID == vf {
			return VFState{VLAN: v.Vlan, QoS: v.Qos, MAC: v.Mac, SpoofChk: v.Spoofchk, Trust: v.Trust != 0, LinkState: LinkState(v.LinkState)}, nil
		}
	}
	return VFState{}, fmt.Errorf("%s: the driver reports no VF %d", pf, vf)
}

// SetVF applies st with one netlink request per setting, as ip(8) does.
// It reads the current state first and sends only what differs, because
// some drivers reset the VF on every VLAN write.
func (c NetlinkConfigurator) SetVF(pf string, vf int, st VFState) error {
	cur, err := c.GetVF(pf, vf)
	if err != nil {
		return err
	}
	link, err := netlink.LinkByName(pf)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnknownPF, pf, err)
	}
	var errs []error
	step := func(what string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s vf %d: %s: %w", pf, vf, what, err))
		}
	}
	if cur.VLAN != st.VLAN || cur.QoS != st.QoS {
		step(fmt.Sprintf("vlan %d qos %d", st.VLAN, st.QoS), netlink.LinkSetVfVlanQos(link, vf, st.VLAN, st.QoS))
	}
	if !bytes.Equal(cur.MAC, st.MAC) && (hasMAC(st.MAC) || hasMAC(cur.MAC)) {
		mac := st.MAC
		if !hasMAC(mac) {
			mac = make(net.HardwareAddr, 6)
		}
		step("mac "+mac.String(), netlink.LinkSetVfHardwareAddr(link, vf, mac))
	}
	if cur.SpoofChk != st.SpoofChk {
		step(fmt.Sprintf("spoofchk %v", onOff(st.SpoofChk)), netlink.LinkSetVfSpoofchk(link, vf, st.SpoofChk))
	}
	if cur.Trust != st.Trust {
		step(fmt.Sprintf("trust %v", onOff(st.Trust)), netlink.LinkSetVfTrust(link, vf, st.Trust))
	}
	if cur.LinkState != st.LinkState {
		step("state "+st.LinkState.String(), netlink.LinkSetVfState(link, vf, uint32(st.LinkState)))
	}
	return errors.Join(errs...)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// MemConfigurator keeps VF settings in memory. It is safe for concurrent
// use. A VF it has never seen has the default state (no VLAN, no MAC,
// spoofchk on, trust off, link auto), which is what a fresh VF reports.
type MemConfigurator struct {
	mu    sync.RWMutex
	state map[vfKey]VFState
	// OnSet, if set, runs after every change (the simulated NIC rebuilds
	// its forwarding table there).
	OnSet func()
}

type vfKey struct {
	pf string
	vf int
}

// DefaultVFState is the state of a freshly enabled VF.
func DefaultVFState() VFState { return VFState{SpoofChk: true, LinkState: LinkAuto} }

// NewMemConfigurator returns an empty in-memory configurator.
func NewMemConfigurator() *MemConfigurator {
	return &MemConfigurator{state: map[vfKey]VFState{}}
}

// GetVF returns the VF's state.
func (m *MemConfigurator) GetVF(pf string, vf int) (VFState, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	st, ok := m.state[vfKey{pf, vf}]
	if !ok {
		return DefaultVFState(), nil
	}
	return cloneState(st), nil
}

// SetVF stores the VF's state.
func (m *MemConfigurator) SetVF(pf string, vf int, st VFState) error {
	if st.VLAN < 0 || st.VLAN > 4094 {
		return fmt.Errorf("%s vf %d: VLAN %d out of range 0-4094", pf, vf, st.VLAN)
	}
	m.mu.Lock()
	m.state[vfKey{pf, vf}] = cloneState(st)
	m.mu.Unlock()
	if m.OnSet != nil {
		m.OnSet()
	}
	return nil
}

func cloneState(st VFState) VFState {
	if st.MAC != nil {
		st.MAC = append(net.HardwareAddr(nil), st.MAC...)
	}
	return st
}

// ParseVFSettings reads settings in ip(8)'s words ("vlan 5 mac
// 3e:e5:a8:40:0d:00 spoofchk off trust on state enable") over base.
func ParseVFSettings(base VFState, s string) (VFState, error) {
	f := strings.Fields(s)
	st := cloneState(base)
	if len(f)%2 != 0 {
		return st, fmt.Errorf("VF settings %q: every key needs a value", s)
	}
	for i := 0; i < len(f); i += 2 {
		k, v := f[i], f[i+1]
		var err error
		switch k {
		case "vlan":
			_, err = fmt.Sscan(v, &st.VLAN)
			if err == nil && (st.VLAN < 0 || st.VLAN > 4094) {
				err = errors.New("out of range 0-4094")
			}
		case "qos":
			_, err = fmt.Sscan(v, &st.QoS)
		case "mac":
			st.MAC, err = net.ParseMAC(v)
		case "spoofchk", "trust":
			if v != "on" && v != "off" {
				err = errors.New("use on or off")
			} else if k == "spoofchk" {
				st.SpoofChk = v == "on"
			} else {
				st.Trust = v == "on"
			}
		case "state":
			err = st.LinkState.UnmarshalText([]byte(v))
		default:
			err = errors.New("unknown setting (use vlan, qos, mac, spoofchk, trust, state)")
		}
		if err != nil {
			return st, fmt.Errorf("VF setting %s %s: %w", k, v, err)
		}
	}
	return st, nil
}
