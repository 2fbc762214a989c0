package topo

import (
	"fmt"
	"strconv"
	"strings"
)

// Spec is a parsed mn spec string such as "tree,depth=2,fanout=3" or
// "tc,bw=10,delay=5ms": a name, positional arguments and keyword arguments
// in the order given. Values stay strings; each consumer converts them and
// names the key when a value is wrong.
type Spec struct {
	Name   string
	Args   []string
	Kwargs []KeyValue
}

// KeyValue is one key=value item of a spec string.
type KeyValue struct{ Key, Value string }

// ParseSpec splits a spec string the way Mininet's splitArgs does: on commas,
// items with '=' are keywords, the rest positional. There is no quoting.
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Spec{}, fmt.Errorf("%w: empty spec", ErrBadSpec)
	}
	parts := strings.Split(s, ",")
	spec := Spec{Name: strings.TrimSpace(parts[0])}
	if spec.Name == "" || strings.Contains(spec.Name, "=") {
		return Spec{}, fmt.Errorf("%w %q: it must start with a name", ErrBadSpec, clip(s))
	}
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if p == "" {
			return Spec{}, fmt.Errorf("%w %q: empty item", ErrBadSpec, clip(s))
		}
		if k, v, ok := strings.Cut(p, "="); ok {
			if k == "" {
				return Spec{}, fmt.Errorf("%w %q: item %q has no key", ErrBadSpec, clip(s), clip(p))
			}
			spec.Kwargs = append(spec.Kwargs, KeyValue{Key: k, Value: v})
			continue
		}
		if len(spec.Kwargs) > 0 {
			return Spec{}, fmt.Errorf("%w %q: positional argument %q follows a key=value argument", ErrBadSpec, clip(s), clip(p))
		}
		spec.Args = append(spec.Args, p)
	}
	return spec, nil
}

// Get returns the value of a keyword argument.
func (s Spec) Get(key string) (string, bool) {
	for i := len(s.Kwargs) - 1; i >= 0; i-- {
		if s.Kwargs[i].Key == key {
			return s.Kwargs[i].Value, true
		}
	}
	return "", false
}

// Params returns the keyword arguments as Params.
func (s Spec) Params() Params {
	p := Params{}
	for _, kv := range s.Kwargs {
		p[kv.Key] = kv.Value
	}
	return p
}

// String renders the spec back in mn's syntax.
func (s Spec) String() string {
	parts := append([]string{s.Name}, s.Args...)
	for _, kv := range s.Kwargs {
		parts = append(parts, kv.Key+"="+kv.Value)
	}
	return strings.Join(parts, ",")
}

// bindInts maps positional and keyword arguments onto named integer
// parameters, as a Python call would, with defaults for the rest.
func (s Spec) bindInts(names []string, defaults map[string]int) (map[string]int, error) {
	if len(s.Args) > len(names) {
		return nil, fmt.Errorf("%w: topology %s takes at most %d arguments (%s), got %d",
			ErrBadSpec, clip(s.Name), len(names), strings.Join(names, ", "), len(s.Args))
	}
	raw := map[string]string{}
	for i, a := range s.Args {
		raw[names[i]] = a
	}
	for _, kv := range s.Kwargs {
		known := false
		for _, n := range names {
			known = known || n == kv.Key
		}
		if !known {
			return nil, fmt.Errorf("%w: topology %s has no parameter %q (it takes %s)",
				ErrBadSpec, clip(s.Name), clip(kv.Key), strings.Join(names, ", "))
		}
		if _, twice := raw[kv.Key]; twice {
			return nil, fmt.Errorf("%w: topology %s: parameter %s is given twice", ErrBadSpec, clip(s.Name), kv.Key)
		}
		raw[kv.Key] = kv.Value
	}
	out := map[string]int{}
	for _, n := range names {
		v, given := raw[n]
		if !given {
			d, ok := defaults[n]
			if !ok {
				return nil, fmt.Errorf("%w: topology %s needs parameter %s (it takes %s)",
					ErrBadSpec, clip(s.Name), n, strings.Join(names, ", "))
			}
			out[n] = d
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("%w: topology %s: %s must be an integer, got %q", ErrBadSpec, clip(s.Name), n, clip(v))
		}
		out[n] = i
	}
	return out, nil
}

// clip shortens user text quoted in an error message, so a huge input
// gives a readable one-line error.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "..."
}
