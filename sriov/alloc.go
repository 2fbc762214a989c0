package sriov

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Pair is one link's VF pair: VF Index of Cable.A and of Cable.B, both on
// VLAN. Orig* are the VFs' settings before hymn changed them.
type Pair struct {
	Link  string  `json:"link"`
	Cable Cable   `json:"cable"`
	Index int     `json:"index"`
	VLAN  int     `json:"vlan"`
	A     VF      `json:"a"`
	B     VF      `json:"b"`
	OrigA VFState `json:"orig_a"`
	OrigB VFState `json:"orig_b"`
}

// AllocatorConfig configures an Allocator.
type AllocatorConfig struct {
	Inventory *Inventory
	SysFS     SysFS
	Conf      Configurator
	// NeedNetdev skips VFs without a netdev (bound to vfio-pci, say):
	// namespace nodes take VFs as netdevs.
	NeedNetdev bool
	// StatePath, if set, is rewritten after every change with the run's
	// pairs and their original settings, so `hymn sriov list` can show
	// which links use which VFs and a crashed run's VFs can be restored
	// (RestoreState).
	StatePath string
	// LockPath, if set, is flock'ed around each allocation so that two
	// processes sharing the hardware never pick the same VFs.
	LockPath string
	Run      string // recorded in the state file
}

// Allocator hands out VF pairs and VLANs. It is safe for concurrent use.
type Allocator struct {
	cfg   AllocatorConfig
	mu    sync.Mutex
	pfs   map[string]PF
	pairs []*Pair
	used  map[string]map[int]bool // cable → pair indexes taken by this allocator
	vlans map[string]map[int]bool // cable → VLANs taken by this allocator
}

// NewAllocator discovers the inventory's PFs and validates it against
// them.
func NewAllocator(cfg AllocatorConfig) (*Allocator, error) {
	if cfg.Inventory == nil {
		return nil, fmt.Errorf("%w: no inventory", ErrInventory)
	}
	if cfg.Conf == nil {
		cfg.Conf = NetlinkConfigurator{}
	}
	all, err := cfg.SysFS.PFs()
	if err != nil {
		return nil, err
	}
	if err := cfg.Inventory.Validate(all); err != nil {
		return nil, err
	}
	a := &Allocator{cfg: cfg, pfs: map[string]PF{}, used: map[string]map[int]bool{}, vlans: map[string]map[int]bool{}}
	for _, p := range all {
		a.pfs[p.Name] = p
	}
	for _, c := range cfg.Inventory.Cables {
		for _, p := range []string{c.A, c.B} {
			if a.pfs[p].NumVFs == 0 {
				return nil, fmt.Errorf("PF %s has no VFs enabled (sriov_numvfs is 0; run hymn sriov setup)", p)
			}
		}
	}
	return a, nil
}

// Inventory returns the inventory the allocator works on.
func (a *Allocator) Inventory() *Inventory { return a.cfg.Inventory }

// cablePairs returns the pairs a cable offers: VF i on both sides.
func (a *Allocator) cablePairs(c Cable) [][2]VF {
	pa, pb := a.pfs[c.A], a.pfs[c.B]
	byIndex := map[int]VF{}
	for _, v := range pb.VFs {
		byIndex[v.Index] = v
	}
	var out [][2]VF
	for _, v := range pa.VFs {
		if w, ok := byIndex[v.Index]; ok {
			out = append(out, [2]VF{v, w})
		}
	}
	return out
}

// Allocate takes a free VF pair and a free VLAN for a link, sets both VFs
// to the VLAN with spoofchk off, trust on and link state enable (what the
// CIMininet scripts set), and returns the pair. Cables are tried in
// inventory order. VFs that someone else configured are skipped, never
// changed.
func (a *Allocator) Allocate(link string) (*Pair, error) {
	unlock, err := a.lockFile()
	if err != nil {
		return nil, err
	}
	defer unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	var reasons []string
	var vlanFull bool
	for _, c := range a.cfg.Inventory.Cables {
		p, reason, err := a.allocateOn(c, link)
		if err != nil {
			return nil, err
		}
		if p != nil {
			return p, nil // recorded by allocateOn
		}
		if strings.HasPrefix(reason, "no free VLAN") {
			vlanFull = true
		}
		reasons = append(reasons, reason)
	}
	sentinel := ErrNoFreePair
	if vlanFull {
		sentinel = ErrNoFreeVLAN
	}
	return nil, fmt.Errorf("link %s: %w", link, &allocError{sentinel, strings.Join(reasons, "; ")})
}

// allocError carries the exact message (which begins like its sentinel)
// while matching the sentinel with errors.Is.
type allocError struct {
	sentinel error
	msg      string
}

func (e *allocError) Error() string { return e.msg }
func (e *allocError) Unwrap() error { return e.sentinel }

func (a *Allocator) allocateOn(c Cable, link string) (*Pair, string, error) {
	key := c.String()
	pairs := a.cablePairs(c)
	// VLANs in use on the cable: ours, and any port VLAN someone else set
	// on a VF of either PF (reusing it would join their wire).
	taken := map[int]bool{}
	for v := range a.vlans[key] {
		taken[v] = true
	}
	foreign := map[[2]string]bool{}
	states := map[[2]string]VFState{}
	for _, pf := range []string{c.A, c.B} {
		for _, vf := range a.pfs[pf].VFs {
			k := [2]string{pf, fmt.Sprint(vf.Index)}
			st, err := a.cfg.Conf.GetVF(pf, vf.Index)
			if err != nil {
				return nil, "", fmt.Errorf("reading %s vf %d: %w", pf, vf.Index, err)
			}
			states[k] = st
			if a.used[key][vf.Index] {
				continue
			}
			if st.Foreign() {
				foreign[k] = true
				if st.VLAN != 0 {
					taken[st.VLAN] = true
				}
			}
		}
	}
	inUse, foreignPairs, noNetdev := 0, 0, 0
	var free *[2]VF
	for i := range pairs {
		p := pairs[i]
		switch {
		case a.used[key][p[0].Index]:
			inUse++
		case foreign[[2]string{c.A, fmt.Sprint(p[0].Index)}] || foreign[[2]string{c.B, fmt.Sprint(p[1].Index)}]:
			inUse++
			foreignPairs++
		case a.cfg.NeedNetdev && (p[0].Netdev == "" || p[1].Netdev == ""):
			inUse++
			noNetdev++
		case free == nil:
			free = &pairs[i]
		}
	}
	if free == nil {
		msg := fmt.Sprintf("no free VF pair on cable %s: %d of %d in use", c, inUse, len(pairs))
		var why []string
		if foreignPairs > 0 {
			why = append(why, fmt.Sprintf("%d configured by someone else", foreignPairs))
		}
		if noNetdev > 0 {
			why = append(why, fmt.Sprintf("%d without a netdev", noNetdev))
		}
		if len(why) > 0 {
			msg += " (" + strings.Join(why, ", ") + ")"
		}
		return nil, msg, nil
	}
	ranges := a.cfg.Inventory.CableVLANs(c)
	vlan := 0
	for _, r := range ranges {
		for v := r.Lo; v <= r.Hi && vlan == 0; v++ {
			if !taken[v] {
				vlan = v
			}
		}
		if vlan != 0 {
			break
		}
	}
	if vlan == 0 {
		n := 0
		for v := range taken {
			if ranges.Contains(v) {
				n++
			}
		}
		return nil, fmt.Sprintf("no free VLAN on cable %s: range %s has %d of %d in use", c, ranges, n, ranges.Size()), nil
	}
	va, vb := free[0], free[1]
	p := &Pair{Link: link, Cable: c, Index: va.Index, VLAN: vlan, A: va, B: vb,
		OrigA: states[[2]string{c.A, fmt.Sprint(va.Index)}], OrigB: states[[2]string{c.B, fmt.Sprint(vb.Index)}]}
	set := func(orig VFState) VFState {
		st := cloneState(orig)
		st.VLAN, st.SpoofChk, st.Trust, st.LinkState = vlan, false, true, LinkEnable
		return st
	}
	// The pair and the VFs' original settings are on record before the
	// first VF changes: a crash at any point after this leaves a state file
	// from which hymn clean restores them.
	a.pairs = append(a.pairs, p)
	if err := a.saveLocked(); err != nil {
		a.pairs = a.pairs[:len(a.pairs)-1]
		return nil, "", fmt.Errorf("link %s: recording VF pair: %w", link, err)
	}
	// Undoing is best effort, but a VF left half-configured or a record
	// that still names the pair is said along with the first error.
	forget := func() error {
		a.pairs = a.pairs[:len(a.pairs)-1]
		return a.saveLocked()
	}
	if err := a.cfg.Conf.SetVF(c.A, va.Index, set(p.OrigA)); err != nil {
		undo := errors.Join(a.cfg.Conf.SetVF(c.A, va.Index, p.OrigA), forget())
		return nil, "", errors.Join(fmt.Errorf("link %s: configuring %s vf %d: %w", link, c.A, va.Index, err), undo)
	}
	if err := a.cfg.Conf.SetVF(c.B, vb.Index, set(p.OrigB)); err != nil {
		undo := errors.Join(a.cfg.Conf.SetVF(c.B, vb.Index, p.OrigB), a.cfg.Conf.SetVF(c.A, va.Index, p.OrigA), forget())
		return nil, "", errors.Join(fmt.Errorf("link %s: configuring %s vf %d: %w", link, c.B, vb.Index, err), undo)
	}
	if a.used[key] == nil {
		a.used[key], a.vlans[key] = map[int]bool{}, map[int]bool{}
	}
	a.used[key][va.Index] = true
	a.vlans[key][vlan] = true
	return p, "", nil
}

// Release restores a pair's VFs to their original settings and frees the
// pair and its VLAN.
func (a *Allocator) Release(p *Pair) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.releaseLocked(p)
	return errors.Join(err, a.saveLocked())
}

func (a *Allocator) releaseLocked(p *Pair) error {
	idx := -1
	for i, q := range a.pairs {
		if q == p {
			idx = i
		}
	}
	if idx < 0 {
		return nil
	}
	a.pairs = append(a.pairs[:idx], a.pairs[idx+1:]...)
	key := p.Cable.String()
	delete(a.used[key], p.Index)
	delete(a.vlans[key], p.VLAN)
	return restorePair(a.cfg.Conf, p)
}

func restorePair(conf Configurator, p *Pair) error {
	return errors.Join(
		wrapVF(p.Cable.A, p.A.Index, conf.SetVF(p.Cable.A, p.A.Index, p.OrigA)),
		wrapVF(p.Cable.B, p.B.Index, conf.SetVF(p.Cable.B, p.B.Index, p.OrigB)))
}

func wrapVF(pf string, vf int, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("restoring %s vf %d: %w", pf, vf, err)
}

// ReleaseAll releases every pair (newest first) and removes the state file.
func (a *Allocator) ReleaseAll() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var errs []error
	for len(a.pairs) > 0 {
		errs = append(errs, a.releaseLocked(a.pairs[len(a.pairs)-1]))
	}
	if a.cfg.StatePath != "" {
		if err := os.Remove(a.cfg.StatePath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Pairs returns the pairs in allocation order.
func (a *Allocator) Pairs() []*Pair {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*Pair(nil), a.pairs...)
}

// State is what a state file records about one run's SR-IOV links.
type State struct {
	Run       string    `json:"run"`
	Simulated bool      `json:"simulated"`
	SysRoot   string    `json:"sysfs_root"`
	Namespace string    `json:"namespace,omitempty"` // the simulated NIC's hidden namespace
	Updated   time.Time `json:"updated"`
	Inventory Inventory `json:"inventory"`
	Pairs     []*Pair   `json:"pairs"`
	// VFs holds the simulated NIC's VF settings (real hardware reports
	// its own through netlink).
	VFs map[string][]VFState `json:"vfs,omitempty"`
}

func (a *Allocator) saveLocked() error {
	if a.cfg.StatePath == "" {
		return nil
	}
	st := State{Run: a.cfg.Run, SysRoot: a.cfg.SysFS.root(), Updated: time.Now(), Inventory: *a.cfg.Inventory, Pairs: a.pairs}
	if sim, ok := a.cfg.Conf.(*SimNIC); ok {
		st.Simulated, st.Namespace, st.VFs = true, sim.Namespace(), sim.vfTable()
	}
	return WriteState(a.cfg.StatePath, &st)
}

// WriteState writes a state file atomically (write and rename), so a
// reader never sees half of one.
func WriteState(path string, st *State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing SR-IOV state: %w", err)
	}
	return os.Rename(tmp, path)
}

// ReadState reads a state file.
func ReadState(path string) (*State, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &st, nil
}

// RestoreState restores the original settings of every VF a (crashed)
// run recorded in its state file, then removes the file. Simulated runs
// need nothing restored: their VFs vanish with their namespace.
func RestoreState(path string, conf Configurator) error {
	st, err := ReadState(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	if !st.Simulated {
		if conf == nil {
			conf = NetlinkConfigurator{}
		}
		// A PF that no longer exists (unplugged, a driver reload, a test's
		// stand-in gone) has no VFs left to restore: skipping it keeps
		// hymn clean from failing on the record forever.
		restore := func(pf string, vf int, orig VFState) error {
			if err := conf.SetVF(pf, vf, orig); err != nil && !errors.Is(err, ErrUnknownPF) {
				return wrapVF(pf, vf, err)
			}
			return nil
		}
		for _, p := range st.Pairs {
			errs = append(errs, restore(p.Cable.A, p.A.Index, p.OrigA), restore(p.Cable.B, p.B.Index, p.OrigB))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return os.Remove(path)
}

func (a *Allocator) lockFile() (func(), error) {
	if a.cfg.LockPath == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(filepath.Dir(a.cfg.LockPath), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(a.cfg.LockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("SR-IOV lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		_ = f.Close() // nothing written; the lock error is reported
		return nil, fmt.Errorf("SR-IOV lock %s: %w", a.cfg.LockPath, err)
	}
	// Nothing is written to the lock file, and closing it drops the lock
	// even if the unlock failed: neither result is news.
	return func() {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		_ = f.Close()
	}, nil
}
