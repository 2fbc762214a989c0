package topo

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/fileio"
	"github.com/hymn-net/hymn/python"
)

// recorderScript runs a custom file against hymn's own mininet package
// (python.Files, the one "hymn python" uses) and writes what the chosen
// topology's build() added. The package's objects are proxies that reach a
// hymn process only when a network is built, so importing it starts
// nothing; the script refuses, before the file runs, the parts that would
// (a Mininet object, the CLI).
//
//go:embed custom_recorder.py
var recorderScript []byte

// CustomError is a Mininet custom file that failed while hymn ran it: the
// exception's last traceback line, and the line of the file it came from.
type CustomError struct {
	File      string
	Line      int    // line in File; 0 when the error is not in the file itself
	Msg       string // the traceback's last line, e.g. "NameError: name 'x' is not defined"
	Traceback string // the whole traceback, for -v debug output
}

func (e *CustomError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Is makes a failing custom file count as bad input.
func (e *CustomError) Is(target error) bool { return target == ErrBadFile }

// knownCustomKeys are the Mininet options hymn reads or deliberately
// carries, besides the link parameters (RegisterLinkParams); any other
// key is kept in Params but reported, because Mininet silently ignores
// unknown options and a typo would go unnoticed.
var knownCustomKeys = []string{
	"ip", "mac", "cls", "defaultRoute", "cpu", "cores", "sched", "dpid", "stp",
	"use_htb",
	"cpus", "cpupin", "memory", "cmdline",
	"port1", "port2", "intfName1", "intfName2", "addr1", "addr2", "params1", "params2",
	// What the recorder makes of addr1/2 and params1/2's ip and mac.
	"ip1", "ip2", "mac1", "mac2",
}

// linkParamKeys are the link parameters, as package linkparams declares
// them (its table); topo does not import it.
var linkParamKeys []string

// RegisterLinkParams tells topo the link parameters' keys. Package
// linkparams calls it when it is loaded, from its table.
func RegisterLinkParams(keys []string) { linkParamKeys = slices.Clone(keys) }

// LoadCustom runs a Mininet custom topology file (mn --custom FILE --topo
// NAME,ARGS...) with python3 and returns the topology spec names, with
// warnings about what hymn ignores. The file runs unchanged against a
// hymn's mininet package (the one "hymn python" runs; its Topo records what
// build() adds); its topos dictionary names the
// topologies, spec's arguments are converted as mn's makeNumeric does, and a
// name the file does not define falls back to Mininet's built-ins, as mn
// merges the two. A file that raises yields a *CustomError and no topology.
func LoadCustom(ctx context.Context, path string, spec Spec) (*Topo, []string, error) {
	return LoadCustomWith(ctx, path, spec, Limits{})
}

// LoadCustomWith is LoadCustom within lim: the file's run is bounded by
// lim.CustomTimeout, what it prints and the result it writes by
// lim.MaxFileSize, and a built-in it falls back to by lim.MaxNodes.
func LoadCustomWith(ctx context.Context, path string, spec Spec, lim Limits) (*Topo, []string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, nil, err
	}
	// Python would block opening a FIFO, or read a device forever.
	if err := fileio.CheckRegular(abs); err != nil {
		return nil, nil, fmt.Errorf("custom topology file: %w", err)
	}
	if spec.Name == "" {
		return nil, nil, fmt.Errorf("%w: custom file %s: no topology name given (use --topo NAME)", ErrBadSpec, path)
	}
	res, err := runCustom(ctx, abs, spec, lim)
	if err != nil {
		if ce, ok := errors.AsType[*CustomError](err); ok {
			ce.File = path
		}
		return nil, nil, err
	}
	if res.Missing {
		if _, ok := builtins[spec.Name]; ok {
			t, err := FromSpecWith(spec, lim)
			return t, nil, err
		}
		names := slices.Concat(res.Available, BuiltinNames())
		slices.Sort(names)
		names = slices.Compact(names)
		return nil, nil, fmt.Errorf("%w: topology %q is not defined in %s (its topos dictionary has: %s); valid topologies are: %s",
			ErrBadSpec, spec.Name, path, quoteList(res.Available), strings.Join(names, ", "))
	}
	if err := lim.CheckSize(fmt.Sprintf("custom file %s, topology %s", path, spec.Name), uint64(len(res.Nodes)), uint64(len(res.Links))); err != nil {
		return nil, nil, err
	}
	t, warnings, err := res.build()
	if err != nil {
		return nil, nil, &FileError{File: path, Field: "topology " + spec.Name, Err: err}
	}
	return t, warnings, nil
}

func quoteList(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// customResult is what the recorder writes.
type customResult struct {
	Error     string       `json:"error"`
	Line      int          `json:"line"`
	Traceback string       `json:"traceback"`
	Missing   bool         `json:"missing"`
	Available []string     `json:"available"`
	Nodes     []customNode `json:"nodes"`
	Links     []customLink `json:"links"`
	Warnings  []string     `json:"warnings"`
	// The custom file's controllers dict (controller.go).
	Controllers map[string]customController `json:"controllers"`
}

type customNode struct {
	Name   string `json:"name"`
	Kind   Kind   `json:"kind"`
	Params Params `json:"params"`
}

type customLink struct {
	Node1  string `json:"node1"`
	Node2  string `json:"node2"`
	Port1  any    `json:"port1"`
	Port2  any    `json:"port2"`
	Params Params `json:"params"`
}

func runCustom(ctx context.Context, file string, spec Spec, lim Limits) (*customResult, error) {
	python, err := exec.LookPath("python3")
	if err != nil {
		return nil, fmt.Errorf("%w: running Mininet custom topology files needs it (apt-get install python3)", ErrNoPython)
	}
	dir, err := os.MkdirTemp("", "hymn-custom-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := writeRecorder(dir); err != nil {
		return nil, fmt.Errorf("writing the mininet package for the custom file: %w", err)
	}
	kwargs := [][2]string{}
	for _, kv := range spec.Kwargs {
		kwargs = append(kwargs, [2]string{kv.Key, kv.Value})
	}
	req, err := json.Marshal(map[string]any{"file": file, "name": spec.Name, "args": spec.Args, "kwargs": kwargs})
	if err != nil {
		return nil, err
	}
	reqPath, resPath := filepath.Join(dir, "request.json"), filepath.Join(dir, "result.json")
	if err := os.WriteFile(reqPath, req, 0o600); err != nil {
		return nil, err
	}
	parent := ctx
	timeout := lim.customTimeout()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// -B and PYTHONDONTWRITEBYTECODE keep __pycache__ out of the user's
	// directory; -s keeps user site-packages (a real mininet there) out.
	cmd := exec.CommandContext(ctx, python, "-B", "-s", filepath.Join(dir, recorderName), reqPath, resPath)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+dir+pathListTail(os.Getenv("PYTHONPATH")), "PYTHONDONTWRITEBYTECODE=1")
	cmd.WaitDelay = 2 * time.Second
	// What the file prints is kept only for the error message: its tail,
	// bounded, so a file printing forever costs no memory.
	out := &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	runErr := cmd.Run()
	if parent.Err() != nil {
		return nil, fmt.Errorf("running custom file %s: %w", file, parent.Err())
	}
	if ctx.Err() != nil {
		return nil, limitErr("custom file %s ran longer than the limit of %v (set --custom-timeout to raise it)", file, timeout)
	}
	data, readErr := readLimited(resPath, lim.maxFileSize())
	if errors.Is(readErr, ErrTooLarge) {
		return nil, limitErr("custom file %s: its topology is larger than the limit of %s (set --max-file-size to raise it)", file, sizeString(lim.maxFileSize()))
	}
	if readErr != nil {
		msg := lastLine(out.String())
		if runErr != nil {
			return nil, fmt.Errorf("running custom file %s with python3: %v: %s", file, runErr, msg)
		}
		return nil, fmt.Errorf("running custom file %s with python3: no result: %s", file, msg)
	}
	res, err := decodeCustomResult(data)
	if err != nil {
		return nil, fmt.Errorf("reading the result of custom file %s: %w", file, err)
	}
	if res.Error != "" {
		return nil, &CustomError{File: file, Line: res.Line, Msg: res.Error, Traceback: res.Traceback}
	}
	return res, nil
}

// decodeCustomResult reads what the recorder wrote. It is input like any
// other: the custom file runs inside the recorder and can write anything.
func decodeCustomResult(data []byte) (*customResult, error) {
	var res customResult
	if err := json.Unmarshal(data, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return n, nil
}

func (t *tailBuffer) String() string { return string(t.buf) }

func pathListTail(p string) string {
	if p == "" {
		return ""
	}
	return string(os.PathListSeparator) + p
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// recorderName is the recorder's file name in the run's directory: beside
// the mininet package, so that Python puts both first on sys.path.
const recorderName = "hymn_custom.py"

// writeRecorder copies the embedded mininet package and the recorder into
// dir.
func writeRecorder(dir string) error {
	err := fs.WalkDir(python.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		data, err := python.Files.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o600)
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, recorderName), recorderScript, 0o600)
}

// build turns the recorder's record into a Topo, in the order build() added
// things, with the ports Mininet numbered.
func (r *customResult) build() (*Topo, []string, error) {
	t := New()
	warnings := slices.Clone(r.Warnings)
	for _, n := range r.Nodes {
		switch n.Kind {
		case KindHost, KindSwitch, KindRouter:
		default:
			return nil, nil, fmt.Errorf("node %s: unexpected kind %q from the recorder", n.Name, n.Kind)
		}
		warnings = append(warnings, unknownKeys("node "+n.Name, n.Params)...)
		t.AddNode(n.Name, n.Kind, n.Params)
	}
	for _, l := range r.Links {
		p1, err1 := portNumber(l.Port1)
		p2, err2 := portNumber(l.Port2)
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, fmt.Errorf("link %s<->%s: %w", l.Node1, l.Node2, err)
		}
		warnings = append(warnings, unknownKeys("link "+l.Node1+"<->"+l.Node2, l.Params)...)
		t.AddLinkPorts(l.Node1, l.Node2, p1, p2, l.Params)
	}
	if err := customControllers(t, r.Controllers); err != nil { // controller.go
		return nil, nil, err
	}
	if err := t.Err(); err != nil {
		return nil, nil, err
	}
	return t, warnings, nil
}

func portNumber(v any) (int, error) {
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) || f < 0 || f > 1<<20 {
		return 0, fmt.Errorf("port %v is not a port number", v)
	}
	return int(f), nil
}

// unknownKeys warns about options hymn does not know, in a stable order.
func unknownKeys(what string, p Params) []string {
	var keys []string
	for k := range p {
		base := k
		if rest, ok := strings.CutPrefix(k, "params1."); ok {
			base = rest
		} else if rest, ok := strings.CutPrefix(k, "params2."); ok {
			base = rest
		}
		if !slices.Contains(knownCustomKeys, base) && !slices.Contains(linkParamKeys, base) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		out = append(out, fmt.Sprintf("%s: option %s=%s is not used by hymn and is ignored (as Mininet ignores options it does not know)", what, k, p[k]))
	}
	return out
}
