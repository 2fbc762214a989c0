package owner

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// NATSlots is how many NAT subnets there are: the /30s of 172.31.0.0/16.
const NATSlots = 1 << 14

// natDir holds one file per NAT slot in use, named by the slot number and
// holding the run id: created exclusively, so two runs never get one slot.
func natDir() string { return filepath.Join(stateDir, "nat") }

// AllocNAT takes a free NAT slot for run, starting from a slot derived
// from the run id so that runs rarely even try the same one. The slot is
// the run's until FreeNAT (or Clean) releases it.
func AllocNAT(run string) (int, error) {
	if !ValidRunID(run) {
		return 0, fmt.Errorf("NAT slot for run %q: not a run id", run)
	}
	if err := os.MkdirAll(natDir(), 0o755); err != nil {
		return 0, fmt.Errorf("creating %s: %w", natDir(), err)
	}
	h := fnv.New32a()
	h.Write([]byte(run))
	start := int(h.Sum32() % NATSlots)
	for i := 0; i < NATSlots; i++ {
		slot := (start + i) % NATSlots
		err := CreateExclusive(filepath.Join(natDir(), strconv.Itoa(slot)), []byte(run+"\n"), 0o644)
		if err == nil {
			return slot, nil
		}
		if !errors.Is(err, os.ErrExist) {
			return 0, fmt.Errorf("NAT slot %d: %w", slot, err)
		}
	}
	return 0, fmt.Errorf("no free NAT subnet: all %d slots of 172.31.0.0/16 are taken (hymn clean removes those of dead runs)", NATSlots)
}

type natSlot struct {
	slot int
	run  string
}

// natSlots lists the NAT slots in use.
func natSlots() []natSlot {
	entries, _ := os.ReadDir(natDir())
	var out []natSlot
	for _, e := range entries {
		slot, err := strconv.Atoi(e.Name())
		if err != nil || slot < 0 || slot >= NATSlots {
			continue
		}
		data, err := os.ReadFile(filepath.Join(natDir(), e.Name()))
		if err != nil {
			continue
		}
		out = append(out, natSlot{slot, strings.TrimSpace(string(data))})
	}
	return out
}

// NATSlotsOf returns the NAT slots a run holds.
func NATSlotsOf(run string) []int {
	var out []int
	for _, s := range natSlots() {
		if s.run == run {
			out = append(out, s.slot)
		}
	}
	return out
}

// FreeNAT releases a NAT slot if run holds it.
func FreeNAT(run string, slot int) error {
	path := filepath.Join(natDir(), strconv.Itoa(slot))
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(data)) != run {
		return nil // someone else's now
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// NATLinkName is the root-namespace interface name of a NAT slot's link:
// short enough for IFNAMSIZ whatever the run id.
func NATLinkName(slot int) string { return "hymnnat" + strconv.Itoa(slot) }

// LinkAlias is the alias that marks a root-namespace interface as the
// run's (interface names are too short to hold a run id).
func LinkAlias(run string) string { return Prefix + run }
