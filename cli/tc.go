package cli

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/emulator"
	"github.com/spf13/cobra"
	"github.com/vishvananda/netlink"
)

// Environment of hymn tc: which run and node a process is in (hymn exec
// sets them) and which tc the user chose (hymn python --tc).
const (
	envRun  = "HYMN_RUN"
	envNode = "HYMN_NODE"
	envTC   = "HYMN_TC" // emulator (default) or kernel
)

// newTCCmd is hymn tc: the tc a node's processes find first on PATH
// (through the shim, tc_shim.go). Qdisc commands naming netem, tbf or htb
// on one of the node's link interfaces run on hymn's emulator, on that
// interface's egress, while the network runs, on any kernel; everything
// else, and everything with HYMN_TC=kernel, is the system's tc.
func newTCCmd(stdout, stderr io.Writer) *cobra.Command {
	tc := &cobra.Command{
		Use:                "tc [OPTIONS] qdisc|class COMMAND dev DEV ...",
		Short:              "tc for a node's link interfaces, on hymn's emulator (netem, tbf, htb)",
		Hidden:             true,
		DisableFlagParsing: true,
		SilenceUsage:       true,
		SilenceErrors:      true,
		RunE: func(_ *cobra.Command, args []string) error {
			code := runTC(args, stdout, stderr)
			if code != 0 {
				os.Exit(code) // tc's exit status, as scripts test it
			}
			return nil
		},
	}
	return tc
}

// errSystemTC means the command is not hymn's to serve.
var errSystemTC = errors.New("for the system's tc")

// systemTC is the machine's tc, skipping the shim's directory.
func systemTC() (string, error) {
	for _, p := range []string{"/usr/sbin/tc", "/sbin/tc", "/usr/bin/tc", "/bin/tc"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", errors.New("tc is not installed (apt-get install iproute2)")
}

func execSystemTC(args []string, stderr io.Writer) int {
	p, err := systemTC()
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "hymn tc: %v\n", err)
		return 127
	}
	err = syscall.Exec(p, append([]string{"tc"}, args...), os.Environ())
	_, _ = fmt.Fprintf(stderr, "hymn tc: %s: %v\n", p, err)
	return 126
}

// tcCommand is a parsed tc command line.
type tcCommand struct {
	stats   bool
	details bool
	object  string // qdisc or class
	verb    string // add, change, replace, delete, show
	dev     string
	handle  string // qdisc handle "1:" or class id "1:10"
	parent  string // "root" or "1:10"
	kind    string
	args    []string
}

// matches is iproute2's: s is a prefix of word.
func matches(s, word string) bool { return s != "" && strings.HasPrefix(word, s) }

// parseTC reads tc's command line far enough to tell whether hymn serves
// it; errSystemTC when not.
func parseTC(args []string) (*tcCommand, error) {
	c := &tcCommand{}
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		o := strings.TrimPrefix(args[0], "-")
		o = "-" + strings.TrimPrefix(o, "-")
		switch {
		case matches(o, "-statistics") || matches(o, "-stats"):
			c.stats = true
		case matches(o, "-details"):
			c.details = true
		case matches(o, "-pretty"), matches(o, "-raw"), matches(o, "-iec"), matches(o, "-timestamp"), matches(o, "-tshort"):
		default: // -batch, -netns, -json, -force, ...: the system's
			return nil, errSystemTC
		}
		args = args[1:]
	}
	if len(args) < 2 {
		return nil, errSystemTC
	}
	switch {
	case matches(args[0], "qdisc"):
		c.object = "qdisc"
	case matches(args[0], "class"):
		c.object = "class"
	default:
		return nil, errSystemTC
	}
	switch v := args[1]; {
	case matches(v, "add"):
		c.verb = "add"
	case matches(v, "change"):
		c.verb = "change"
	case matches(v, "replace"):
		c.verb = "replace"
	case matches(v, "delete"):
		c.verb = "delete"
	case matches(v, "list"), matches(v, "show"), matches(v, "lst"):
		c.verb = "show"
	default:
		return nil, errSystemTC
	}
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		k := rest[i]
		val := ""
		if i+1 < len(rest) {
			val = rest[i+1]
		}
		switch k {
		case "dev":
			c.dev = val
			i++
		case "handle", "classid":
			c.handle = normHandle(val)
			i++
		case "root":
			c.parent = "root"
		case "parent":
			c.parent = normHandle(val)
			i++
		case "estimator":
			i += 2
		case "ingress", "clsact", "stab", "invisible", "egress_block", "ingress_block":
			return nil, errSystemTC
		default:
			c.kind = k
			c.args = rest[i+1:]
			i = len(rest)
		}
	}
	if c.dev == "" {
		if c.verb == "show" {
			return c, nil
		}
		return nil, errSystemTC
	}
	return c, nil
}

// normHandle writes "1", "1:" and "0001:" alike as "1:", and a class id
// "1:a" as "1:a" (tc's handles are hex).
func normHandle(h string) string {
	major, minor, has := strings.Cut(h, ":")
	trim := func(s string) string {
		v, err := strconv.ParseUint(s, 16, 32)
		if err != nil {
			return s
		}
		return strconv.FormatUint(v, 16)
	}
	if major == "" {
		major = "0"
	}
	if !has || minor == "" || trim(minor) == "0" {
		return trim(major) + ":" // a qdisc, or its root class space
	}
	return trim(major) + ":" + trim(minor)
}

func majorOf(h string) string {
	m, _, _ := strings.Cut(h, ":")
	return m + ":"
}

// runTC serves one tc command line and returns tc's exit status.
func runTC(args []string, stdout, stderr io.Writer) int {
	if os.Getenv(envTC) == "kernel" {
		return execSystemTC(args, stderr)
	}
	c, err := parseTC(args)
	if errors.Is(err, errSystemTC) {
		return execSystemTC(args, stderr)
	}
	t, err := findTCTarget(c.dev)
	if errors.Is(err, errSystemTC) {
		return execSystemTC(args, stderr)
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "hymn tc: %v\n", err)
		return 2
	}
	if c.verb == "show" {
		return t.show(c, args, stdout, stderr)
	}
	if c.object == "qdisc" && c.verb != "delete" && !slices.Contains([]string{"netem", "tbf", "htb"}, c.kind) {
		return execSystemTC(args, stderr)
	}
	err = t.modify(c, stderr)
	if errors.Is(err, errSystemTC) {
		return execSystemTC(args, stderr)
	}
	var te *tcError
	if errors.As(err, &te) {
		_, _ = fmt.Fprintln(stderr, te.msg)
		if te.usage != "" {
			_, _ = fmt.Fprintln(stderr, te.usage)
		}
		return te.code
	}
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "Error: %v\n", err)
		return 2
	}
	return 0
}

// tcQdisc and tcClass are what hymn tc keeps of one interface's tree.
type tcQdisc struct {
	Kind   string   `json:"kind"`
	Handle string   `json:"handle"`
	Parent string   `json:"parent"`
	Args   []string `json:"args"`
}

type tcClass struct {
	ClassID string   `json:"classid"`
	Parent  string   `json:"parent"`
	Args    []string `json:"args"`
}

type tcState struct {
	Qdiscs  []tcQdisc `json:"qdiscs"`
	Classes []tcClass `json:"classes"`
	Next    int       `json:"next"` // the next automatic handle (8001:, ...)
	touched bool      // tc changed the interface once: its tree is all there is
}

func (s *tcState) at(parent, handle string) int {
	for i, q := range s.Qdiscs {
		if parent != "" && q.Parent == parent || parent == "" && handle != "" && q.Handle == handle {
			return i
		}
	}
	return -1
}

// hasParent says whether a qdisc may hang at parent: the root, or a class
// (or a qdisc's own class space: netem's and tbf's 1:1) of one present.
func (s *tcState) hasParent(parent string) bool {
	if parent == "root" {
		return true
	}
	for _, c := range s.Classes {
		if c.ClassID == parent {
			return true
		}
	}
	for _, q := range s.Qdiscs {
		if q.Kind != "htb" && majorOf(parent) == q.Handle {
			return true
		}
	}
	return false
}

// removeUnder drops the qdiscs and classes below handle.
func (s *tcState) removeUnder(handle string) {
	var qs []tcQdisc
	var gone []string
	for _, q := range s.Qdiscs {
		if majorOf(q.Parent) == handle && q.Parent != "root" {
			gone = append(gone, q.Handle)
			continue
		}
		qs = append(qs, q)
	}
	s.Qdiscs = qs
	var cs []tcClass
	for _, c := range s.Classes {
		if majorOf(c.ClassID) != handle {
			cs = append(cs, c)
		}
	}
	s.Classes = cs
	for _, h := range gone {
		s.removeUnder(h)
	}
}

// apply changes the tree by one command, as the kernel would.
func (s *tcState) apply(c *tcCommand) error {
	if c.object == "class" {
		return s.applyClass(c)
	}
	if c.parent == "" && c.verb != "delete" && c.verb != "change" {
		return kernelErr("Need parent or root") // tc: "Error: Parent ... must be specified"
	}
	i := s.at(c.parent, c.handle)
	switch c.verb {
	case "add", "replace":
		if err := checkQdisc(c.kind, c.args); err != nil {
			return err
		}
		if !s.hasParent(c.parent) {
			return kernelErr("Failed to find qdisc with specified classid.")
		}
		if i >= 0 && c.verb == "add" {
			if s.Qdiscs[i].Kind == c.kind && c.parent == "root" {
				return kernelErr("Exclusivity flag on, cannot modify.")
			}
			return kernelErr("NLM_F_REPLACE needed to override.")
		}
		h := c.handle
		if h == "" {
			if i >= 0 {
				h = s.Qdiscs[i].Handle
			} else {
				s.Next++
				h = strconv.FormatInt(int64(0x8000+s.Next), 16) + ":"
			}
		}
		q := tcQdisc{Kind: c.kind, Handle: h, Parent: c.parent, Args: c.args}
		if i >= 0 {
			if s.Qdiscs[i].Kind != c.kind || s.Qdiscs[i].Handle != h {
				s.removeUnder(s.Qdiscs[i].Handle)
				i = s.at(c.parent, "")
			}
			s.Qdiscs[i] = q
		} else {
			s.Qdiscs = append(s.Qdiscs, q)
		}
	case "change":
		if i < 0 {
			return kernelErr("Specified qdisc not found.")
		}
		if c.kind != "" && c.kind != s.Qdiscs[i].Kind {
			return kernelErr("Specified qdisc kind is different.")
		}
		if err := checkQdisc(s.Qdiscs[i].Kind, c.args); err != nil {
			return err
		}
		s.Qdiscs[i].Args = c.args
	case "delete":
		if i < 0 {
			return errSystemTC // nothing of hymn's there: the kernel's answer
		}
		s.removeUnder(s.Qdiscs[i].Handle)
		s.Qdiscs = slices.Delete(s.Qdiscs, s.at(c.parent, s.Qdiscs[i].Handle), s.at(c.parent, s.Qdiscs[i].Handle)+1)
	}
	return nil
}

func (s *tcState) applyClass(c *tcCommand) error {
	var htb *tcQdisc
	for i := range s.Qdiscs {
		if s.Qdiscs[i].Kind == "htb" && (c.handle != "" && majorOf(c.handle) == s.Qdiscs[i].Handle || c.parent != "" && majorOf(c.parent) == s.Qdiscs[i].Handle) {
			htb = &s.Qdiscs[i]
		}
	}
	if htb == nil {
		return errSystemTC
	}
	i := slices.IndexFunc(s.Classes, func(k tcClass) bool { return k.ClassID == c.handle })
	switch c.verb {
	case "add", "replace", "change":
		if c.kind != "" && c.kind != "htb" {
			return kernelErr("Specified class kind does not match the qdisc's.")
		}
		if c.handle == "" || !strings.Contains(c.handle, ":") || strings.HasSuffix(c.handle, ":") {
			return kernelErr("Invalid classid.")
		}
		if _, err := parseHTBClass(c.args); err != nil {
			return err
		}
		k := tcClass{ClassID: c.handle, Parent: c.parent, Args: c.args}
		switch {
		case i >= 0 && c.verb == "add":
			return kernelErr("Exclusivity flag on, cannot modify.")
		case i >= 0:
			if k.Parent == "" {
				k.Parent = s.Classes[i].Parent
			}
			s.Classes[i] = k
		case c.verb == "change":
			return kernelErr("Specified class not found.")
		default:
			if k.Parent == "" {
				k.Parent = htb.Handle
			}
			s.Classes = append(s.Classes, k)
		}
	case "delete":
		if i < 0 {
			return kernelErr("Specified class not found.")
		}
		s.Classes = slices.Delete(s.Classes, i, i+1)
	}
	return nil
}

func checkQdisc(kind string, args []string) error {
	var err error
	switch kind {
	case "netem":
		_, err = parseNetem(args)
	case "tbf":
		_, err = parseTBF(args)
	case "htb":
		_, err = parseHTBQdisc(args)
	}
	return err
}

// emulatorArgs is the whole emulator configuration the tree stands for,
// from the emulator's defaults: netem's options, and the slowest rate of
// netem, a tbf (shaping with its byte limit) or the htb class that
// carries the traffic (the one a netem hangs under, else htb's default
// class, else the slowest).
func (s *tcState) emulatorArgs() (args, notes []string, err error) {
	args = resetArgs()
	var n *netem
	var nq *tcQdisc
	type shaper struct {
		rate  uint64
		limit uint64 // 0: none (a rate of its own, netem's and htb's)
	}
	var shapers []shaper
	for i, q := range s.Qdiscs {
		switch q.Kind {
		case "netem":
			if n != nil {
				return nil, nil, kernelErr("hymn's emulator runs one netem per interface")
			}
			if n, err = parseNetem(q.Args); err != nil {
				return nil, nil, err
			}
			nq = &s.Qdiscs[i]
		case "tbf":
			t, err := parseTBF(q.Args)
			if err != nil {
				return nil, nil, err
			}
			shapers = append(shapers, shaper{t.rate, t.limit})
		case "htb":
			def, _ := parseHTBQdisc(q.Args)
			var pick *htbClass
			for _, c := range s.Classes {
				if majorOf(c.ClassID) != q.Handle {
					continue
				}
				k, err := parseHTBClass(c.Args)
				if err != nil {
					return nil, nil, err
				}
				switch {
				case nq != nil && nq.Parent == c.ClassID, nq == nil && normHandle(q.Handle+def) == c.ClassID:
					pick = k
				case pick == nil || k.ceil < pick.ceil:
					pick = k
				}
			}
			if pick != nil {
				shapers = append(shapers, shaper{rate: pick.ceil})
			}
		}
	}
	if n != nil {
		args = append(args, n.emulatorArgs()...)
		notes = n.notes
		if n.rate > 0 {
			shapers = append(shapers, shaper{rate: n.rate})
		}
	}
	slices.SortFunc(shapers, func(a, b shaper) int { return int(int64(a.rate>>8) - int64(b.rate>>8)) })
	if len(shapers) > 0 {
		if sh := shapers[0]; sh.limit > 0 {
			args = append(args, "space", strconv.FormatUint(sh.rate, 10), strconv.FormatUint(sh.limit, 10))
		} else {
			args = append(args, "rate", strconv.FormatUint(sh.rate, 10))
		}
	}
	if _, err := emulator.ParseArgs(args); err != nil {
		return nil, nil, kernelErr("hymn's emulator: %v", err)
	}
	return args, notes, nil
}

// resetArgs brings every setting tc can change back to the emulator's
// default, so a tree's configuration replaces what was there.
func resetArgs() []string {
	args := []string{"delay", "0ns", "jitter", "0ns", "distribution", "normal", "loss", "none", "nospace", "nopolice", "fifo",
		"limit", strconv.Itoa(emulator.DefaultBuffer), "overhead", strconv.Itoa(emulator.DefaultOverhead)}
	// Keys the emulator's grammar has on some versions only.
	for _, opt := range [][]string{{"duplicate", "0%"}, {"corrupt", "0%"}, {"noecn"}, {"noslot"}} {
		if _, err := emulator.ParseArgs(opt); err == nil {
			args = append(args, opt...)
		}
	}
	return args
}

// show prints the qdiscs (or classes) in force as tc shows them: hymn's
// on the node's link interfaces, the system's elsewhere.
func (t *tcTarget) show(c *tcCommand, args []string, stdout, stderr io.Writer) int {
	if c.dev != "" {
		if t.link == nil {
			return execSystemTC(args, stderr)
		}
		text, ok := t.render(c, false)
		if !ok {
			return execSystemTC(args, stderr)
		}
		_, _ = io.WriteString(stdout, text)
		return 0
	}
	// Every interface: the system's listing with this node's link
	// interfaces' blocks replaced by hymn's.
	p, err := systemTC()
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "hymn tc: %v\n", err)
		return 127
	}
	out, err := exec.Command(p, args...).Output()
	if err != nil {
		_, _ = stdout.Write(out)
		return execSystemTC(args, stderr)
	}
	var b strings.Builder
	done := map[string]bool{}
	skip := false
	for _, line := range strings.SplitAfter(string(out), "\n") {
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, c.object+" ") {
			dev := devOf(line)
			skip = false
			if tt := t.forDev(dev); tt != nil {
				skip = true
				if !done[dev] {
					done[dev] = true
					if text, ok := tt.render(c, true); ok {
						b.WriteString(text)
					} else {
						skip = false
					}
				}
			}
		}
		if !skip {
			b.WriteString(line)
		}
	}
	_, _ = io.WriteString(stdout, b.String())
	return 0
}

func devOf(line string) string {
	f := strings.Fields(line)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "dev" {
			return f[i+1]
		}
	}
	return ""
}

// render prints dev's tree (withDev: with "dev X" as tc's listing of
// every interface has it); false when hymn has nothing there (the
// system's output stands).
func (t *tcTarget) render(c *tcCommand, withDev bool) (string, bool) {
	st, err := t.loadState()
	if err != nil {
		return "", false
	}
	sample := t.sample()
	// The device's own counters: what went through its root qdisc, read
	// now (the run's sample of the emulator may be a second old).
	var devBytes, devPkts uint64
	if l, err := netlink.LinkByName(t.dev); err == nil && l.Attrs().Statistics != nil {
		devBytes, devPkts = l.Attrs().Statistics.TxBytes, l.Attrs().Statistics.TxPackets
	}
	dev := ""
	if withDev {
		dev = "dev " + t.dev + " "
	}
	var b strings.Builder
	stats := func() {
		if !c.stats {
			return
		}
		bytes, pkts := devBytes, devPkts
		var dropped, queued uint64
		if sample != nil {
			if e := sample.Emu; e != nil {
				for _, v := range e.Drops {
					dropped += v
				}
				queued = uint64(max(e.Queued, 0))
			}
		}
		avg := uint64(0)
		if pkts > 0 {
			avg = bytes / pkts
		}
		fmt.Fprintf(&b, " Sent %d bytes %d pkt (dropped %d, overlimits 0 requeues 0) \n backlog %db %dp requeues 0\n", bytes, pkts, dropped, queued*avg, queued)
	}
	if c.object == "class" {
		for _, k := range st.Classes {
			cl, err := parseHTBClass(k.Args)
			if err != nil {
				continue
			}
			where := "parent " + k.Parent
			if strings.HasSuffix(k.Parent, ":") {
				where = "root"
			}
			fmt.Fprintf(&b, "class htb %s %s%s %s\n", k.ClassID, dev, where, cl)
			stats()
		}
		return b.String(), len(st.Qdiscs) > 0
	}
	if len(st.Qdiscs) == 0 && !st.touched {
		// Nothing set with tc: the link's own emulation (a TCLink's
		// delay or queue), shown as the netem tc would have made.
		if sample == nil || sample.Emu == nil {
			return "", false
		}
		cfg, err := emulator.Parse(sample.Emu.Config)
		if err != nil || cfg.String() == emulator.DefaultConfig().String() {
			return "", false
		}
		fmt.Fprintf(&b, "qdisc netem 8001: %sroot refcnt 2 %s\n", dev, netemOf(cfg))
		stats()
		return b.String(), true
	}
	if len(st.Qdiscs) == 0 {
		return "", false
	}
	order := append([]tcQdisc{}, st.Qdiscs...)
	slices.SortStableFunc(order, func(a, b tcQdisc) int {
		if a.Parent == "root" && b.Parent != "root" {
			return -1
		}
		if b.Parent == "root" && a.Parent != "root" {
			return 1
		}
		return 0
	})
	for _, q := range order {
		where := "parent " + q.Parent
		if q.Parent == "root" {
			where = "root refcnt 2"
		}
		opts := ""
		switch q.Kind {
		case "netem":
			if n, err := parseNetem(q.Args); err == nil {
				opts = n.String()
			}
		case "tbf":
			if tb, err := parseTBF(q.Args); err == nil {
				opts = tb.String()
			}
		case "htb":
			def, _ := parseHTBQdisc(q.Args)
			opts = "r2q 10 default 0x" + def + " direct_packets_stat 0 direct_qlen 1000"
		}
		fmt.Fprintf(&b, "qdisc %s %s %s%s %s\n", q.Kind, q.Handle, dev, where, opts)
		stats()
	}
	return b.String(), true
}

// netemOf shows an emulator configuration as netem's options.
func netemOf(cfg emulator.Config) string {
	n := &netem{limit: cfg.Buffer, delay: cfg.Delay, jitter: cfg.Jitter}
	switch {
	case cfg.Space.Enabled && cfg.Space.Limit > 0 && cfg.Space.Limit != 1<<20:
		// A shaped link's queue is its spacer's backlog, in full frames
		// (linkparams' bw with max_queue_size).
		n.limit = int(math.Round(float64(cfg.Space.Limit) / float64(emulator.WireBytes(1))))
	case cfg.Buffer == emulator.DefaultBuffer:
		n.limit = netemDefaultLimit // hymn's unbounded default, as netem's
	}
	if cfg.Jitter > 0 && cfg.Distribution.String() == "uniform" {
		n.jitter = time.Duration(float64(cfg.Jitter) * 1.7320508075688772)
	}
	if cfg.Loss.Model == emulator.RandomLoss {
		n.lossModel, n.loss = "random", []string{strconv.FormatFloat(cfg.Loss.Prob*100, 'g', 6, 64) + "%"}
	}
	if cfg.Space.Enabled {
		n.rate = cfg.Space.Rate
	}
	return n.String()
}

// tcStateDir holds what hymn tc keeps of each interface's tree, per run.
var tcStateDir = filepath.Join("/run/hymn", "tc")
