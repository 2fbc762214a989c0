package topo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/internal/yamlpos"
	"go.yaml.in/yaml/v3"
)

// A link's `schedule:` in a hymn file (docs/schedules.md):
//
//	schedule: sat.csv                       # a schedule file, both directions
//	schedule:                               # inline, both directions
//	  - {at: 0s, params: {delay: 20ms}}
//	  - {at: 15s, params: {delay: 40ms}}
//	schedule:
//	  repeat: 30s                           # optional period
//	  ramp: true                            # linear change between points (default for all)
//	  points: [...]                         # or file: sat.csv
//	schedule:
//	  a>b: {points: [...], repeat: 30s}     # per direction (each any form above)
//	  b>a: down.csv
//
// The schedule is checked here, with the YAML line of each mistake, and
// stored in the link's params ("schedule", "a>b.schedule", "b>a.schedule")
// in the inline text form the network reads. File names (and those of
// `trace` parameters) are resolved by the loader's Files (for a file on
// disk: relative to it) and read now, so a bad schedule or trace stops the
// load; a topology from outside (LoadFrom with RemoteFiles) may name none.

var (
	scheduleKeys      = []string{"repeat", "ramp", "points", "file", "a>b", "b>a"}
	schedulePointKeys = []string{"at", "params", "ramp"}
	scheduleParamKeys = emulator.ScheduleParamColumns()
)

// linkSchedule handles the link's schedule: key and the file references
// among its params (own).
func (l *fileLoader) linkSchedule(byKey map[string]pair, field string, own Params) {
	for _, k := range sortedKeys(own) {
		base := strings.TrimPrefix(strings.TrimPrefix(k, "a>b."), "b>a.")
		if base != "trace" && base != "schedule" {
			continue
		}
		v := strings.TrimSpace(own[k])
		if base == "schedule" && emulator.IsEncodedSchedule(v) {
			if _, err := emulator.DecodeSchedule("inline schedule", v); err != nil {
				l.ErrAt(nil, field+".params."+k, "%v", err)
			}
			continue
		}
		path, err := FilePath(l.files, k, v)
		if err != nil {
			l.ErrAt(nil, field+".params."+k, "%v", err)
			continue
		}
		own[k] = path
		if base == "trace" {
			_, err = emulator.LoadDeliveryTrace(path)
		} else {
			_, err = emulator.LoadSchedule(path)
		}
		if err != nil {
			l.ErrAt(nil, field+".params."+k, "%v", err)
		}
	}
	p, ok := byKey["schedule"]
	if !ok {
		return
	}
	n := yamlpos.Deref(p.Val)
	f := field + ".schedule"
	if n != nil && n.Kind == yaml.MappingNode {
		ps, ok := l.Mapping(n, f)
		if !ok {
			return
		}
		var dirs []pair
		for _, q := range ps {
			if q.Key == "a>b" || q.Key == "b>a" {
				dirs = append(dirs, q)
			}
		}
		if len(dirs) > 0 {
			if len(dirs) != len(ps) {
				l.ErrAt(n, f, "give either a>b:/b>a: or one schedule for both directions, not both")
				return
			}
			for _, q := range dirs {
				l.oneSchedule(q.Val, f+"."+q.Key, q.Key+".schedule", own)
			}
			return
		}
	}
	l.oneSchedule(p.Val, f, "schedule", own)
}

// oneSchedule reads one schedule (file name, list of points, or mapping)
// and stores it under key.
func (l *fileLoader) oneSchedule(v *yaml.Node, field, key string, own Params) {
	if _, dup := own[key]; dup {
		l.ErrAt(v, field, "%s is also given in the link's params; keep one", key)
		return
	}
	n := yamlpos.Deref(v)
	switch {
	case n != nil && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		path, err := FilePath(l.files, key, n.Value)
		if err != nil {
			l.ErrAt(n, field, "%v", err)
			return
		}
		if _, err := emulator.LoadSchedule(path); err != nil {
			l.ErrAt(n, field, "%v", err)
			return
		}
		own[key] = path
		return
	case n != nil && n.Kind == yaml.SequenceNode:
		if s, ok := l.schedulePoints(n, field, "", false); ok {
			own[key] = s.Encode()
		}
		return
	case n == nil || n.Kind != yaml.MappingNode:
		l.ErrAt(n, field, "must be a file name, a list of points or a mapping (points:, repeat:, ramp:), got %s", yamlpos.KindName(n))
		return
	}
	ps, ok := l.Mapping(n, field)
	if !ok {
		return
	}
	l.CheckKeys(ps, field, scheduleKeys[:4])
	byKey := map[string]pair{}
	for _, p := range ps {
		byKey[p.Key] = p
	}
	repeat := ""
	if p, ok := byKey["repeat"]; ok {
		if repeat, ok = l.Value(p.Val, field+".repeat"); !ok {
			return
		}
	}
	ramp := false
	if p, ok := byKey["ramp"]; ok {
		if ramp, ok = l.Boolean(p.Val, field+".ramp"); !ok {
			return
		}
	}
	pts, hasPts := byKey["points"]
	file, hasFile := byKey["file"]
	switch {
	case hasPts == hasFile:
		l.ErrAt(n, field, "give points: or file:")
	case hasFile:
		if repeat != "" || byKey["ramp"].Val != nil {
			l.ErrAt(n, field, "a schedule file sets its own repeat and ramp")
			return
		}
		l.oneSchedule(file.Val, field+".file", key, own)
	default:
		list := yamlpos.Deref(pts.Val)
		if list == nil || list.Kind != yaml.SequenceNode {
			l.ErrAt(list, field+".points", "must be a list of {at:, params:}, got %s", yamlpos.KindName(list))
			return
		}
		if s, ok := l.schedulePoints(list, field+".points", repeat, ramp); ok {
			own[key] = s.Encode()
		}
	}
}

// schedulePoints turns YAML points into the CSV form and lets the emulator
// parse it, mapping its line numbers back to the YAML nodes, so that the
// file format and YAML follow one set of rules.
func (l *fileLoader) schedulePoints(list *yaml.Node, field, repeat string, ramp bool) (*emulator.Schedule, bool) {
	var b strings.Builder
	b.WriteString("time,delay,jitter,rate,loss,ramp\n")
	nodes := []*yaml.Node{list} // CSV line k (from 1) was written from nodes[k-1]
	before := len(l.Errs)
	for i, item := range list.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		ps, ok := l.Mapping(item, f)
		if !ok {
			continue
		}
		l.CheckKeys(ps, f, schedulePointKeys)
		cells := map[string]string{"ramp": fmt.Sprint(ramp)}
		for _, p := range ps {
			switch p.Key {
			case "at":
				if v, ok := l.cell(p.Val, f+".at"); ok {
					cells["time"] = v
				}
			case "ramp":
				if v, ok := l.Boolean(p.Val, f+".ramp"); ok {
					cells["ramp"] = fmt.Sprint(v)
				}
			case "params":
				pp, ok := l.Mapping(p.Val, f+".params")
				if !ok {
					continue
				}
				l.CheckKeys(pp, f+".params", scheduleParamKeys)
				for _, q := range pp {
					if v, ok := l.cell(q.Val, f+".params."+q.Key); ok {
						cells[q.Key] = v
					}
				}
			}
		}
		if cells["time"] == "" {
			l.ErrAt(item, f, "a point needs at:")
			continue
		}
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s,%s\n", cells["time"], cells["delay"], cells["jitter"], cells["rate"], cells["loss"], cells["ramp"])
		nodes = append(nodes, item)
	}
	if repeat != "" {
		if strings.ContainsAny(repeat, ",;\n") {
			l.ErrAt(list, field, "repeat %q is not a time", repeat)
			return nil, false
		}
		fmt.Fprintf(&b, "repeat,%s\n", repeat)
		nodes = append(nodes, list)
	}
	if len(l.Errs) > before {
		return nil, false
	}
	s, err := emulator.ParseSchedule(l.File, []byte(b.String()))
	if err != nil {
		at := list
		var te *emulator.TraceError
		if errors.As(err, &te) {
			if te.Line >= 1 && te.Line <= len(nodes) {
				at = nodes[te.Line-1]
			}
			err = errors.New(te.Msg)
		}
		l.ErrAt(at, field, "%v", err)
		return nil, false
	}
	return s, true
}

// cell is a scalar that fits in a CSV cell.
func (l *fileLoader) cell(n *yaml.Node, field string) (string, bool) {
	v, ok := l.Value(n, field)
	if !ok {
		return "", false
	}
	if strings.ContainsAny(v, ",;\n\r") {
		l.ErrAt(n, field, "%q: a value cannot contain ',' or ';'", v)
		return "", false
	}
	return strings.TrimSpace(v), true
}
