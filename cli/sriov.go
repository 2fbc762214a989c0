package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/sriov"
	"github.com/spf13/cobra"
)

// NewSRIOVCmd returns `hymn sriov`: list PFs and VFs with their VLANs and
// the links using them, show the cabled pairs, and set up VFs (or run a
// simulated NIC).
func NewSRIOVCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sriov",
		Short: "SR-IOV PFs, VFs and VF pairs (list, pairs, setup)",
		Long: `hymn sriov shows and prepares the SR-IOV hardware that --links sriov uses:
physical-function ports (PFs), their virtual functions (VFs) with VLAN,
MAC, spoofchk, trust and link state, and which hymn links use them.
Networks running on hymn's simulated SR-IOV NIC are listed too.

  hymn sriov list [--json]
  hymn sriov pairs [--json]
  hymn sriov setup --pairs enp33s0f0:enp100s0f0 --vfs 14
  hymn sriov setup --simulate --vfs 4      run a simulated NIC until Ctrl-C
  hymn sriov clean                         restore VFs of crashed runs`,
		SilenceUsage: true,
	}
	cmd.AddCommand(newSRIOVListCmd(), newSRIOVPairsCmd(), newSRIOVSetupCmd(), newSRIOVCleanCmd())
	return cmd
}

// sriovReport is what list and pairs print (and --json writes).
type sriovReport struct {
	PFs       []pfReport    `json:"pfs"`
	Simulated []simReport   `json:"simulated,omitempty"`
	Cables    []cableReport `json:"cables,omitempty"`
}

type pfReport struct {
	sriov.PF
	VFs []vfReport `json:"vfs"`
}

type vfReport struct {
	sriov.VF
	State *sriov.VFState `json:"state,omitempty"`
	Link  string         `json:"link,omitempty"`
	Run   string         `json:"run,omitempty"`
}

type simReport struct {
	Run       string     `json:"run"`
	Alive     bool       `json:"alive"`
	Namespace string     `json:"namespace"`
	SysRoot   string     `json:"sysfs_root"`
	PFs       []pfReport `json:"pfs"`
}

type cableReport struct {
	Cable     string       `json:"cable"`
	VLANs     string       `json:"vlans"`
	Simulated bool         `json:"simulated"`
	Run       string       `json:"run,omitempty"`
	Pairs     int          `json:"pairs"`
	InUse     int          `json:"in_use"`
	Used      []sriov.Pair `json:"used"`
}

// runStates reads the state files of every run with SR-IOV links.
func runStates() []*sriov.State {
	files, _ := filepath.Glob(filepath.Join(owner.StateDir, "*-sriov", "state.json"))
	var out []*sriov.State
	for _, f := range files {
		if st, err := sriov.ReadState(f); err == nil {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run < out[j].Run })
	return out
}

type vfUse struct{ link, run string }

// usage maps "pf/index" to the link using that VF.
func usage(states []*sriov.State, simulated bool) map[string]vfUse {
	m := map[string]vfUse{}
	for _, st := range states {
		if st.Simulated != simulated {
			continue
		}
		for _, p := range st.Pairs {
			m[fmt.Sprintf("%s/%d", p.Cable.A, p.A.Index)] = vfUse{p.Link, st.Run}
			m[fmt.Sprintf("%s/%d", p.Cable.B, p.B.Index)] = vfUse{p.Link, st.Run}
		}
	}
	return m
}

func describePFs(pfs []sriov.PF, conf sriov.Configurator, state func(pf string, i int) *sriov.VFState, use map[string]vfUse) []pfReport {
	var out []pfReport
	for _, pf := range pfs {
		r := pfReport{PF: pf}
		for _, vf := range pf.VFs {
			v := vfReport{VF: vf}
			if conf != nil {
				if st, err := conf.GetVF(pf.Name, vf.Index); err == nil {
					v.State = &st
				}
			} else if state != nil {
				v.State = state(pf.Name, vf.Index)
			}
			if u, ok := use[fmt.Sprintf("%s/%d", pf.Name, vf.Index)]; ok {
				v.Link, v.Run = u.link, u.run
			}
			r.VFs = append(r.VFs, v)
		}
		r.PF.VFs = nil // listed with their state in r.VFs
		out = append(out, r)
	}
	return out
}

func collect(sysRoot string) (*sriovReport, []*sriov.State, error) {
	rep := &sriovReport{}
	states := runStates()
	sys := sriov.SysFS{Root: sysRoot}
	pfs, err := sys.PFs()
	if err != nil {
		return nil, nil, err
	}
	// VF settings come from the PF driver, which only the real sysfs has.
	var conf sriov.Configurator
	if sysRoot == "" || sysRoot == "/sys" {
		conf = sriov.NetlinkConfigurator{}
	}
	rep.PFs = describePFs(pfs, conf, nil, usage(states, false))
	for _, st := range states {
		if !st.Simulated {
			continue
		}
		simSys := sriov.SysFS{Root: st.SysRoot}
		spfs, err := simSys.PFs()
		if err != nil {
			continue // the run is stopping
		}
		vfs := st.VFs
		lookup := func(pf string, i int) *sriov.VFState {
			if i < len(vfs[pf]) {
				s := vfs[pf][i]
				return &s
			}
			return nil
		}
		rep.Simulated = append(rep.Simulated, simReport{Run: st.Run, Alive: owner.Alive(st.Run), Namespace: st.Namespace,
			SysRoot: st.SysRoot, PFs: describePFs(spfs, nil, lookup, usage([]*sriov.State{st}, true))})
	}
	return rep, states, nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newSRIOVListCmd() *cobra.Command {
	var asJSON bool
	var sysRoot string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List PFs and VFs with their VLANs and the links using them",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, _, err := collect(sysRoot)
			if err != nil {
				return err
			}
			rep.Cables = nil
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			printList(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "write JSON")
	cmd.Flags().StringVar(&sysRoot, "sysfs", "", "sysfs root (default /sys)")
	return cmd
}

func printPFs(w io.Writer, pfs []pfReport, indent string) {
	for _, pf := range pfs {
		_, _ = fmt.Fprintf(w, "%sPF %s  %s  %s  %d of %d VFs\n", indent, pf.Name, pf.PCI, pf.Driver, pf.NumVFs, pf.TotalVFs)
		for _, vf := range pf.VFs {
			line := fmt.Sprintf("%s  vf %-2d %s  %-14s %-8s", indent, vf.Index, vf.PCI, orDash(vf.Netdev), orDash(vf.Driver))
			if st := vf.State; st != nil {
				line += fmt.Sprintf(" vlan %-4d mac %-17s spoofchk %-3s trust %-3s state %s", st.VLAN, orDash(st.MACString()), onOff(st.SpoofChk), onOff(st.Trust), st.LinkState)
			}
			if vf.Link != "" {
				line += fmt.Sprintf("  link %s (run %s)", vf.Link, vf.Run)
			}
			_, _ = fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
}

func printList(w io.Writer, rep *sriovReport) {
	if len(rep.PFs) == 0 {
		_, _ = fmt.Fprintln(w, "No SR-IOV hardware on this machine.")
	}
	printPFs(w, rep.PFs, "")
	for _, s := range rep.Simulated {
		state := "running"
		if !s.Alive {
			state = "stale: hymn clean removes it"
		}
		_, _ = fmt.Fprintf(w, "Simulated NIC of run %s (%s; namespace %s, sysfs %s)\n", s.Run, state, s.Namespace, s.SysRoot)
		printPFs(w, s.PFs, "  ")
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func newSRIOVPairsCmd() *cobra.Command {
	var asJSON bool
	var sysRoot, invPath, vlans string
	var cables []string
	cmd := &cobra.Command{
		Use:   "pairs",
		Short: "Show the cabled PF pairs, their VF pairs and which links use them",
		Long: `pairs shows every cable (two PF ports wired together) with its VLAN range,
how many VF pairs it offers, and the pairs running networks use (link, VLAN,
run). Cables come from --inventory/--pairs and from running networks.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := sriov.Config{Inventory: invPath, VLANs: vlans, SysRoot: sysRoot}
			cs, err := sriov.ParseCables(cables...)
			if err != nil {
				return fmt.Errorf("%w: --pairs: %v", ErrUsage, err)
			}
			cfg.Cables = cs
			inv, err := cfg.LoadInventory()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrUsage, err)
			}
			rep, err := pairsReport(inv, sriov.SysFS{Root: sysRoot})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			if len(rep) == 0 {
				_, _ = fmt.Fprintln(w, "No cables: give --pairs A:B or --inventory FILE; no running network uses SR-IOV links.")
			}
			for _, c := range rep {
				kind := "hardware"
				if c.Simulated {
					kind = "simulated, run " + c.Run
				}
				_, _ = fmt.Fprintf(w, "cable %s (%s): VLANs %s, %d of %d VF pairs in use\n", c.Cable, kind, c.VLANs, c.InUse, c.Pairs)
				for _, p := range c.Used {
					_, _ = fmt.Fprintf(w, "  pair %-2d vlan %-4d %s vf %d <-> %s vf %d  link %s\n", p.Index, p.VLAN, p.Cable.A, p.A.Index, p.Cable.B, p.B.Index, p.Link)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "write JSON")
	cmd.Flags().StringVar(&sysRoot, "sysfs", "", "sysfs root (default /sys)")
	cmd.Flags().StringVar(&invPath, "inventory", "", "pair inventory YAML file")
	cmd.Flags().StringArrayVar(&cables, "pairs", nil, "cabled PF ports A:B (repeatable, or joined with '+')")
	cmd.Flags().StringVar(&vlans, "vlans", "", "VLAN range(s), e.g. 400-4094")
	return cmd
}

func pairsReport(inv *sriov.Inventory, sys sriov.SysFS) ([]cableReport, error) {
	var out []cableReport
	states := runStates()
	countPairs := func(sys sriov.SysFS, c sriov.Cable) int {
		a, errA := sys.PF(c.A)
		b, errB := sys.PF(c.B)
		if errA != nil || errB != nil {
			return 0
		}
		return min(len(a.VFs), len(b.VFs))
	}
	if len(inv.Cables) > 0 {
		pfs, err := sys.PFs()
		if err != nil {
			return nil, err
		}
		if err := inv.Validate(pfs); err != nil {
			return nil, err
		}
	}
	for _, c := range inv.Cables {
		r := cableReport{Cable: c.String(), VLANs: inv.CableVLANs(c).String(), Pairs: countPairs(sys, c), Used: []sriov.Pair{}}
		for _, st := range states {
			if st.Simulated {
				continue
			}
			for _, p := range st.Pairs {
				if p.Cable.A == c.A && p.Cable.B == c.B {
					r.Used = append(r.Used, *p)
				}
			}
		}
		r.InUse = len(r.Used)
		out = append(out, r)
	}
	for _, st := range states {
		simSys := sriov.SysFS{Root: st.SysRoot}
		for _, c := range st.Inventory.Cables {
			if !st.Simulated {
				continue
			}
			r := cableReport{Cable: c.String(), VLANs: st.Inventory.CableVLANs(c).String(), Simulated: true, Run: st.Run,
				Pairs: countPairs(simSys, c), Used: []sriov.Pair{}}
			for _, p := range st.Pairs {
				if p.Cable.A == c.A && p.Cable.B == c.B {
					r.Used = append(r.Used, *p)
				}
			}
			r.InUse = len(r.Used)
			out = append(out, r)
		}
	}
	return out, nil
}

func newSRIOVSetupCmd() *cobra.Command {
	var sysRoot, invPath string
	var cables []string
	var vfs int
	var simulate, force bool
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "Enable VFs on the cabled PFs (or run a simulated NIC)",
		Long: `setup enables --vfs VFs on every PF port of the inventory (--pairs or
--inventory) and sets each VF that nobody configured to spoofchk off, trust on,
state enable, as the CIMininet scripts do; VLANs are set per link when a
network starts. VFs with a VLAN or MAC already set are left alone, and a VF
count that differs from the current one is refused while such VFs exist
(changing it destroys every VF of the PF) unless --force.

With --simulate it runs hymn's simulated SR-IOV NIC in the foreground until
interrupted: its fake sysfs and hidden namespace are printed, so the NIC can
be inspected with hymn sriov list --sysfs DIR and ip netns exec NS ...`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if vfs < 1 || vfs > sriov.MaxVFs {
				return fmt.Errorf("%w: --vfs %d: use 1 to %d VFs per PF", ErrUsage, vfs, sriov.MaxVFs)
			}
			cs, err := sriov.ParseCables(cables...)
			if err != nil {
				return fmt.Errorf("%w: --pairs: %v", ErrUsage, err)
			}
			cfg := sriov.Config{Inventory: invPath, Cables: cs, SysRoot: sysRoot}
			inv, err := cfg.LoadInventory()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrUsage, err)
			}
			if os.Geteuid() != 0 {
				return fmt.Errorf("hymn sriov setup must run as root")
			}
			if simulate {
				return runSimulated(cmd, inv, vfs)
			}
			return setupHardware(cmd.OutOrStdout(), inv, sriov.SysFS{Root: sysRoot}, vfs, force)
		},
	}
	cmd.Flags().StringVar(&sysRoot, "sysfs", "", "sysfs root (default /sys)")
	cmd.Flags().StringVar(&invPath, "inventory", "", "pair inventory YAML file")
	cmd.Flags().StringArrayVar(&cables, "pairs", nil, "cabled PF ports A:B (repeatable, or joined with '+')")
	cmd.Flags().IntVar(&vfs, "vfs", 8, "VFs to enable per PF")
	cmd.Flags().BoolVar(&simulate, "simulate", false, "run a simulated SR-IOV NIC until interrupted")
	cmd.Flags().BoolVar(&force, "force", false, "change the VF count even if that destroys VFs someone configured")
	return cmd
}

func setupHardware(w io.Writer, inv *sriov.Inventory, sys sriov.SysFS, vfs int, force bool) error {
	pfs, err := sys.PFs()
	if err != nil {
		return err
	}
	if err := inv.Validate(pfs); err != nil {
		return err
	}
	conf := sriov.NetlinkConfigurator{}
	for _, c := range inv.Cables {
		for _, name := range []string{c.A, c.B} {
			if err := sys.EnableVFsSafely(conf, name, vfs, force); err != nil {
				return err
			}
			pf, err := sys.PF(name)
			if err != nil {
				return err
			}
			skipped := 0
			for _, vf := range pf.VFs {
				st, err := conf.GetVF(name, vf.Index)
				if err != nil {
					return err
				}
				if st.Foreign() {
					skipped++
					continue
				}
				st.SpoofChk, st.Trust, st.LinkState = false, true, sriov.LinkEnable
				if err := conf.SetVF(name, vf.Index, st); err != nil {
					return err
				}
			}
			_, _ = fmt.Fprintf(w, "%s: %d VFs enabled (spoofchk off, trust on, state enable)", name, len(pf.VFs))
			if skipped > 0 {
				_, _ = fmt.Fprintf(w, "; %d configured by someone else left alone", skipped)
			}
			_, _ = fmt.Fprintln(w)
		}
	}
	return nil
}

func runSimulated(cmd *cobra.Command, inv *sriov.Inventory, vfs int) (err error) {
	run := owner.NewRunID()
	if err := owner.Claim(run); err != nil {
		return err
	}
	dir := filepath.Join(owner.StateDir, run+"-sriov")
	sim, err := sriov.NewSimNIC(sriov.SimConfig{Namespace: owner.NamespaceName(run, "sriov"), Dir: dir, Cables: inv.Cables, VFs: vfs})
	if err != nil {
		return errors.Join(err, owner.Release(run))
	}
	defer func() {
		err = errors.Join(err, sim.Close(), owner.Release(run))
	}()
	inv.Cables = sim.Cables()
	st := &sriov.State{Run: run, Simulated: true, SysRoot: sim.SysFS().Root, Namespace: sim.Namespace(), Inventory: *inv}
	st.VFs = map[string][]sriov.VFState{}
	for _, c := range inv.Cables {
		for _, pf := range []string{c.A, c.B} {
			for i := 0; i < vfs; i++ {
				s, _ := sim.GetVF(pf, i)
				st.VFs[pf] = append(st.VFs[pf], s)
			}
		}
	}
	if err := sriov.WriteState(filepath.Join(dir, "state.json"), st); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	_, _ = fmt.Fprintf(w, "Simulated SR-IOV NIC (run %s): cables %v, %d VFs per PF\n", run, inv.Cables, vfs)
	_, _ = fmt.Fprintf(w, "  sysfs:     %s\n  namespace: %s (VF netdevs: ip netns exec %s ip link)\n", sim.SysFS().Root, sim.Namespace(), sim.Namespace())
	_, _ = fmt.Fprintln(w, "Press Ctrl-C to stop.")
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	return nil
}

func newSRIOVCleanCmd() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Restore the VFs of crashed runs and remove their SR-IOV state",
		Long: `clean finds runs whose owner is gone that still have SR-IOV state, gives
their real VFs back their original settings (from the run's state file),
deletes a simulated NIC's hidden namespace and removes the state. With --all,
running networks are cleaned too.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var errs []error
			n := 0
			for _, run := range sriov.Runs(owner.StateDir) {
				if !all && owner.Alive(run) {
					continue
				}
				if err := netnsx.Delete(owner.NamespaceName(run, "sriov")); err != nil {
					errs = append(errs, err)
				}
				if err := sriov.RemoveRun(owner.StateDir, run, nil); err != nil {
					errs = append(errs, err)
					continue
				}
				_, _ = fmt.Fprintf(cmd.OutOrStdout(), "run %s: SR-IOV state removed\n", run)
				n++
			}
			if n == 0 && len(errs) == 0 {
				_, _ = fmt.Fprintln(cmd.OutOrStdout(), "Nothing to clean.")
			}
			return errors.Join(errs...)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also clean runs whose owner is alive")
	return cmd
}
