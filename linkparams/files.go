package linkparams

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hymn-net/hymn/emulator"
	"github.com/hymn-net/hymn/topo"
)

// LoadTrace reads the Mahimahi delivery trace that parameter key (trace,
// a>b.trace...) names, through files: nil or topo.RemoteFiles refuse the
// name, naming key, before any file is touched.
func LoadTrace(files topo.Files, key, name string) (*emulator.DeliveryTrace, error) {
	path, err := topo.FilePath(files, key, name)
	if err != nil {
		return nil, err
	}
	tr, err := emulator.LoadDeliveryTrace(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return tr, nil
}

// LoadSchedule reads a schedule parameter: a schedule written inline (as
// emulator.Schedule.Encode writes it, what topo's YAML loader stores),
// which any input may give, or a file name, resolved through files as
// LoadTrace does.
func LoadSchedule(files topo.Files, key, v string) (*emulator.Schedule, error) {
	v = strings.TrimSpace(v)
	if emulator.IsEncodedSchedule(v) {
		return emulator.DecodeSchedule("inline schedule", v)
	}
	if v == "" {
		return nil, errors.New("no schedule file given")
	}
	path, err := topo.FilePath(files, key, v)
	if err != nil {
		return nil, err
	}
	return emulator.LoadSchedule(path)
}
