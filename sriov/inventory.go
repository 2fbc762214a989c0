package sriov

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/internal/fileio"
	"go.yaml.in/yaml/v3"
)

// DefaultVLANs is the VLAN range hymn allocates from when none is given:
// clear of VLAN 1 and of the small ids sites tend to use already.
const DefaultVLANs = "400-4094"

// Cable is two PF ports wired to each other. VF i of A and VF i of B form
// pair i, as in CIMininet's HwPair.available_pairs.
type Cable struct {
	A     string `yaml:"a" json:"a"`
	B     string `yaml:"b" json:"b"`
	VLANs string `yaml:"vlans,omitempty" json:"vlans,omitempty"` // overrides the inventory's range
}

func (c Cable) String() string { return c.A + "<->" + c.B }

// Inventory says which PF ports are cabled together and which VLAN ids
// hymn may put on them. In YAML:
//
//	vlans: 400-4094          # default for every cable
//	cables:
//	  - {a: enp33s0f0, b: enp100s0f0}
//	  - {a: enp33s0f1, b: enp100s0f1, vlans: 100-199}
type Inventory struct {
	VLANs  string  `yaml:"vlans,omitempty" json:"vlans,omitempty"`
	Cables []Cable `yaml:"cables" json:"cables"`
}

// LoadInventory reads an inventory file. Unknown keys are errors that name
// the key and line.
func LoadInventory(path string) (*Inventory, error) {
	data, err := fileio.ReadLimited(path, maxInventorySize)
	if errors.Is(err, fileio.ErrTooLarge) {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInventory, path, maxInventorySize)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInventory, err)
	}
	inv, err := ParseInventory(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return inv, nil
}

// ParseInventory reads inventory YAML.
func ParseInventory(data []byte) (*Inventory, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var inv Inventory
	if err := dec.Decode(&inv); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInventory, err)
	}
	if err := inv.check(); err != nil {
		return nil, err
	}
	return &inv, nil
}

// ParseCables reads cables from flags: "enp33s0f0:enp100s0f0", several
// separated by '+' or given as separate strings.
func ParseCables(specs ...string) ([]Cable, error) {
	var out []Cable
	for _, spec := range specs {
		for _, s := range strings.Split(spec, "+") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			a, b, ok := strings.Cut(s, ":")
			if !ok || a == "" || b == "" {
				return nil, fmt.Errorf("%w: cable %q: write two PF ports as A:B, e.g. enp33s0f0:enp100s0f0", ErrInventory, s)
			}
			for _, p := range []string{a, b} {
				if err := checkPortName(p); err != nil {
					return nil, fmt.Errorf("%w: cable %q: %v", ErrInventory, s, err)
				}
			}
			out = append(out, Cable{A: a, B: b})
		}
	}
	return out, nil
}

// check validates what can be checked without the machine: every cable
// names two different ports, no port is on two cables, VLAN ranges parse.
func (inv *Inventory) check() error {
	if _, err := ParseVLANRanges(inv.vlans()); err != nil {
		return err
	}
	seen := map[string]string{}
	for i, c := range inv.Cables {
		if c.A == "" || c.B == "" {
			return fmt.Errorf("%w: cables[%d]: both a and b must name a PF port", ErrInventory, i)
		}
		for _, p := range []string{c.A, c.B} {
			if err := checkPortName(p); err != nil {
				return fmt.Errorf("%w: cables[%d]: %v", ErrInventory, i, err)
			}
		}
		if c.A == c.B {
			return fmt.Errorf("%w: cables[%d]: %s is cabled to itself", ErrInventory, i, c.A)
		}
		for _, p := range []string{c.A, c.B} {
			if other, dup := seen[p]; dup {
				return fmt.Errorf("%w: cables[%d]: port %s is already on cable %s (a port has one cable)", ErrInventory, i, p, other)
			}
			seen[p] = c.String()
		}
		if c.VLANs != "" {
			if _, err := ParseVLANRanges(c.VLANs); err != nil {
				return fmt.Errorf("cables[%d] (%s): %w", i, c, err)
			}
		}
	}
	return nil
}

// checkPortName accepts what can name a PF network interface: 1 to 15
// bytes, no '/', ':' or blanks, not "." or "..", not starting with '-'
// (names reach sysfs paths and command lines).
func checkPortName(p string) error {
	if p == "" || len(p) > 15 {
		return fmt.Errorf("port %.20q: an interface name has 1 to 15 bytes", p)
	}
	if p == "." || p == ".." || p[0] == '-' || strings.ContainsFunc(p, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-' || r == '@')
	}) {
		return fmt.Errorf("port %q is not an interface name", p)
	}
	return nil
}

// maxInventorySize bounds an inventory file.
const maxInventorySize = 1 << 20

func (inv *Inventory) vlans() string {
	if inv.VLANs == "" {
		return DefaultVLANs
	}
	return inv.VLANs
}

// CableVLANs returns the VLAN ranges of a cable.
func (inv *Inventory) CableVLANs(c Cable) VLANRanges {
	s := c.VLANs
	if s == "" {
		s = inv.vlans()
	}
	r, _ := ParseVLANRanges(s) // checked when the inventory was made
	return r
}

// Validate checks the inventory against the PFs that exist: every cable
// port must be one of them. The error lists the PFs there are, so a typo
// is easy to see.
func (inv *Inventory) Validate(pfs []PF) error {
	if err := inv.check(); err != nil {
		return err
	}
	if len(inv.Cables) == 0 {
		return fmt.Errorf("%w: no cables: say which PF ports are wired together (e.g. --links sriov,pairs=enp33s0f0:enp100s0f0)", ErrInventory)
	}
	known := map[string]bool{}
	var names []string
	for _, p := range pfs {
		known[p.Name] = true
		names = append(names, p.Name)
	}
	for i, c := range inv.Cables {
		for _, p := range []string{c.A, c.B} {
			if !known[p] {
				have := "none"
				if len(names) > 0 {
					have = strings.Join(names, ", ")
				}
				return fmt.Errorf("%w: cables[%d] (%s): %w: %s (SR-IOV ports here: %s)", ErrInventory, i, c, ErrUnknownPF, p, have)
			}
		}
	}
	return nil
}

// VLANRange is an inclusive range of VLAN ids.
type VLANRange struct{ Lo, Hi int }

func (r VLANRange) String() string {
	if r.Lo == r.Hi {
		return strconv.Itoa(r.Lo)
	}
	return fmt.Sprintf("%d-%d", r.Lo, r.Hi)
}

// VLANRanges is a sorted list of disjoint ranges.
type VLANRanges []VLANRange

func (rs VLANRanges) String() string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Size is the number of ids in the ranges.
func (rs VLANRanges) Size() int {
	n := 0
	for _, r := range rs {
		n += r.Hi - r.Lo + 1
	}
	return n
}

// ParseVLANRanges reads "400-4094" or "100-199,300,400-499". Ids must lie
// in 1-4094 (0 means untagged, 4095 is reserved) and ranges must not
// overlap, since an overlap is almost always a typo in a list meant to
// partition the space.
func ParseVLANRanges(s string) (VLANRanges, error) {
	var rs VLANRanges
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("%w: VLAN range %q: empty element", ErrInventory, s)
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: VLAN range %q: %q is not a number or LO-HI", ErrInventory, s, part)
		}
		if a < 1 || b > 4094 || a > b {
			return nil, fmt.Errorf("%w: VLAN range %q: %q must satisfy 1 <= LO <= HI <= 4094", ErrInventory, s, part)
		}
		rs = append(rs, VLANRange{a, b})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Lo < rs[j].Lo })
	for i := 1; i < len(rs); i++ {
		if rs[i].Lo <= rs[i-1].Hi {
			return nil, fmt.Errorf("%w: VLAN ranges %s and %s overlap", ErrInventory, rs[i-1], rs[i])
		}
	}
	return rs, nil
}

// Contains reports whether id is in the ranges.
func (rs VLANRanges) Contains(id int) bool {
	for _, r := range rs {
		if id >= r.Lo && id <= r.Hi {
			return true
		}
	}
	return false
}
