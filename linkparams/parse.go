package linkparams

import (
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// ErrInvalid marks invalid link parameters; errors name the key.
var ErrInvalid = errors.New("invalid link parameters")

// Keys are the link parameters that ask for an emulated link, from Table:
// Mininet's TCLink options (TCKeys: bw in Mbit/s, delay, jitter, loss in
// percent, max_queue_size in packets) and hymn's own (emu, a whole
// emulator configuration in the text form of emulator.Parse, and the
// emulator's keys with '_' for '-'). Any of them may be prefixed with
// "a>b." or "b>a." to apply to one direction only (a is Node1 of the
// link).
var Keys = names(func(*Spec) bool { return true })

// IsKey reports whether k (with or without a direction prefix) is one of
// Keys.
func IsKey(k string) bool {
	_, ok := Lookup(strings.TrimPrefix(strings.TrimPrefix(k, "a>b."), "b>a."))
	return ok
}

// TCIntfInfo is what Mininet's TCIntf prints for one interface of a link
// while the link is added, e.g. "(10.00Mbit 10ms delay 1.00000% loss) ":
// the shaping of that interface's egress, which is the direction dir
// (emulator.AtoB for the link's first interface, BtoA for the second). It is
// empty when the link sets none of bw, delay, loss and max_queue_size for
// that direction (Mininet's TCIntf then configures nothing and says
// nothing).
func TCIntfInfo(p topo.Params, dir emulator.Direction) string {
	get := func(k string) (string, bool) {
		if v, ok := p[dir.String()+"."+k]; ok {
			return strings.TrimSpace(v), true
		}
		v, ok := p[k]
		return strings.TrimSpace(v), ok
	}
	bw, hasBW := get("bw")
	delay, hasDelay := get("delay")
	jitter, hasJitter := get("jitter")
	loss, hasLoss := get("loss")
	_, hasQueue := get("max_queue_size")
	lossPct, _ := strconv.ParseFloat(strings.TrimSuffix(loss, "%"), 64)
	if !hasBW && delay == "" && lossPct == 0 && !hasQueue {
		return ""
	}
	var stuff []string
	if hasBW {
		f, _ := strconv.ParseFloat(bw, 64)
		stuff = append(stuff, fmt.Sprintf("%.2fMbit", f))
	}
	if hasDelay {
		stuff = append(stuff, delay+" delay")
	}
	if hasJitter {
		stuff = append(stuff, jitter+" jitter")
	}
	if hasLoss {
		stuff = append(stuff, fmt.Sprintf("%.5f%% loss", lossPct))
	}
	return "(" + strings.Join(stuff, " ") + ") "
}

// NeedsEmulator reports whether link params ask for an emulator.
func NeedsEmulator(p topo.Params) bool {
	for k := range p {
		if IsKey(k) {
			return true
		}
	}
	return false
}

// Configs turns link Params into the emulator configurations of
// the two directions (a→b is Node1→Node2). Mininet's semantics hold: the
// values apply to each direction once, as Mininet applies them to both
// interfaces, so an h1–s1–h2 round trip with delay=10ms takes 40 ms.
// Errors wrap ErrInvalid and name the parameter. Files the parameters name
// (trace) are the local user's, relative to the working directory; see
// ConfigsFrom.
func Configs(p topo.Params) (ab, ba emulator.Config, err error) {
	return ConfigsFrom(p, topo.LocalFiles(""))
}

// ConfigsFrom is Configs for parameters whose file names files resolves:
// topo.RemoteFiles (or nil) for input from outside, which may name none.
func ConfigsFrom(p topo.Params, files topo.Files) (ab, ba emulator.Config, err error) {
	common := map[string]string{}
	dirs := [2]map[string]string{{}, {}}
	for k, v := range p {
		switch {
		case strings.HasPrefix(k, "a>b."):
			dirs[0][k[4:]] = v
		case strings.HasPrefix(k, "b>a."):
			dirs[1][k[4:]] = v
		default:
			common[k] = v
		}
	}
	var out [2]emulator.Config
	for i := range out {
		m := map[string]string{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range dirs[i] {
			if !IsKey(k) {
				return ab, ba, fmt.Errorf("%w: %s.%s: unknown parameter (use %s)", ErrInvalid, emulator.Direction(i), k, strings.Join(Keys, ", "))
			}
			m[k] = v
		}
		c := emulator.DefaultConfig()
		if err := ApplyFrom(&c, m, files); err != nil {
			return ab, ba, err
		}
		out[i] = c
	}
	return out[0], out[1], nil
}

// Apply applies link parameters (without direction prefixes) to c. Keys that are not
// emulation keys are ignored, as Mininet ignores unknown link options.
// Files the parameters name are the local user's (see ApplyFrom).
func Apply(c *emulator.Config, m map[string]string) error {
	return ApplyFrom(c, m, topo.LocalFiles(""))
}

// ApplyFrom is Apply for parameters whose file names files resolves; with
// topo.RemoteFiles or nil a key naming a file is refused, naming the key,
// before any file is touched.
func ApplyFrom(c *emulator.Config, m map[string]string, files topo.Files) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		if IsKey(k) {
			keys = append(keys, k)
		}
	}
	// A fixed order makes results independent of map order: allow_large
	// first (every key is validated as it is applied), then emu (so
	// single keys refine it), the rest alphabetically.
	rank := func(k string) int {
		if s, _ := Lookup(k); s.first > 0 {
			return s.first
		}
		return 3
	}
	sort.Slice(keys, func(i, j int) bool {
		if ri, rj := rank(keys[i]), rank(keys[j]); ri != rj {
			return ri < rj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		s, _ := Lookup(k)
		err := s.apply(c, k, strings.TrimSpace(m[k]), m, files)
		var (
			bad *keyErr
			fe  *fileErr
		)
		switch {
		case err == nil:
		case errors.As(err, &fe):
			return fmt.Errorf("%w: %w", ErrInvalid, fe.err)
		case errors.As(err, &bad):
			return fmt.Errorf("%w: %s=%s: %s", ErrInvalid, bad.key, m[bad.key], bad.msg)
		default:
			return fmt.Errorf("%w: %s=%s: %v", ErrInvalid, k, m[k], err)
		}
	}
	if c.Delay < 0 {
		return fmt.Errorf("%w: delay=%s: must not be negative", ErrInvalid, m["delay"])
	}
	return c.Validate()
}

// scaled returns the decimal number v (as strconv.ParseFloat accepts it;
// the caller has checked it) times num/den, rounded once: v is read as
// the exact fraction it writes, not first rounded to a float64. So the text
// the typed setters write (linkparams.Rate, Loss) gives back exactly the
// value they were given: bw=0.3 is 300000 bit/s, not 299999.99999999994,
// and loss=P% is the float64 nearest to P/100.
func scaled(v string, num, den int64) float64 {
	r, ok := new(big.Rat).SetString(strings.TrimSpace(v))
	if !ok {
		// Forms big.Rat does not read (hexadecimal floats): rounded twice.
		f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
		return f * float64(num) / float64(den)
	}
	f, _ := r.Mul(r, big.NewRat(num, den)).Float64()
	return f
}

// fields splits a value on blanks and '/', so `ge=1%/30%` works inside a
// comma-separated --link spec.
func fields(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ' ' || r == '\t' || r == '/' })
}

// Change applies a live change to c: either the emulator's text form
// ("delay 50ms jitter 1ms", on top of c like `tc qdisc change`) or
// key=value pairs of Keys ("delay=50ms bw=10"). c is unchanged on error.
// Files the parameters name are the local user's (see ChangeFrom).
func Change(c *emulator.Config, params string) error {
	return ChangeFrom(c, params, topo.LocalFiles(""))
}

// ChangeFrom is Change for parameters whose file names files resolves:
// topo.RemoteFiles (or nil) for a change that arrived from outside.
func ChangeFrom(c *emulator.Config, params string, files topo.Files) error {
	f := strings.Fields(params)
	if len(f) == 0 {
		return fmt.Errorf("%w: no parameters given", ErrInvalid)
	}
	kv := true
	for _, s := range f {
		if !strings.Contains(s, "=") {
			kv = false
		}
	}
	if !kv {
		cp := *c
		if err := cp.Apply(f); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		*c = cp
		return nil
	}
	m := map[string]string{}
	for _, s := range f {
		k, v, _ := strings.Cut(s, "=")
		if !IsKey(k) || strings.Contains(k, ">") {
			return fmt.Errorf("%w: %s: unknown parameter (use %s)", ErrInvalid, k, strings.Join(Keys, ", "))
		}
		m[k] = v
	}
	cp := *c
	if err := ApplyFrom(&cp, m, files); err != nil {
		return err
	}
	*c = cp
	return nil
}

// TCKeys are the options of Mininet's TCLink that hymn's emulator serves.
var TCKeys = names(func(s *Spec) bool { return s.TC })

// ParseLinkSpec reads an mn --link value into the parameters it gives every
// link (nil for plain links):
//
//	default                                   plain veth links
//	tc,bw=10,delay=10ms,jitter=1ms,loss=1,max_queue_size=100
//	                                          Mininet's TCLink options, served by hymn's
//	                                          emulator (this kernel has no netem)
//	emu[,key=value...]                        every emulator option (Keys), also per
//	                                          direction: a>b.delay=5ms; and emulator=dpdk
//	                                          (PortsKey) for DPDK ports on VF links
//
// Errors name the offending option and wrap ErrInvalid.
func ParseLinkSpec(spec string) (topo.Params, error) {
	s, err := topo.ParseSpec(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: --link: %v", ErrInvalid, err)
	}
	if len(s.Args) > 0 {
		return nil, fmt.Errorf("%w: --link %s: unexpected argument %q (options are key=value)", ErrInvalid, spec, s.Args[0])
	}
	params := topo.Params{}
	switch s.Name {
	case "default", "":
		if len(s.Kwargs) > 0 {
			return nil, fmt.Errorf("%w: --link default takes no options; use --link tc,%s", ErrInvalid, s.Kwargs[0].Key+"="+s.Kwargs[0].Value)
		}
		return nil, nil
	case "tc", "tclink":
		for _, kv := range s.Kwargs {
			if !slices.Contains(TCKeys, kv.Key) {
				return nil, fmt.Errorf("%w: --link tc: unknown option %q (tc takes %s; --link emu takes every emulator option)", ErrInvalid, kv.Key, strings.Join(TCKeys, ", "))
			}
			params[kv.Key] = kv.Value
		}
		if len(params) == 0 {
			// TCLink without options shapes nothing, as in Mininet.
			return nil, nil
		}
	case "emu":
		params["emu"] = ""
		for _, kv := range s.Kwargs {
			if kv.Key == PortsKey {
				// Which ports the emulator uses, not what it does.
				if _, err := PortsOf(topo.Params{PortsKey: kv.Value}); err != nil {
					return nil, fmt.Errorf("--link %s: %w", spec, err)
				}
				params[kv.Key] = kv.Value
				continue
			}
			if !IsKey(kv.Key) {
				return nil, fmt.Errorf("%w: --link emu: unknown option %q (use %s, optionally prefixed a>b. or b>a.; or %s=%s|%s)", ErrInvalid, kv.Key, strings.Join(Keys, ", "), PortsKey, PortsAFPacket, PortsDPDK)
			}
			params[kv.Key] = kv.Value
		}
	default:
		return nil, fmt.Errorf("%w: --link %s: unknown link type (use default, tc or emu)", ErrInvalid, s.Name)
	}
	if _, _, err := Configs(params); err != nil {
		return nil, fmt.Errorf("--link %s: %w", spec, err)
	}
	return params, nil
}
