package topo

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/fileio"
)

// Limits bound what an input may ask hymn to hold or build. The zero value
// means the defaults below; each field has a command-line flag to raise it.
type Limits struct {
	// MaxNodes bounds the node count of a topology (--max-nodes); 0 means
	// DefaultMaxNodes(), a negative value means no limit.
	MaxNodes int
	// MaxFileSize bounds a topology file, and the result a Mininet custom
	// file prints (--max-file-size); 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// CustomTimeout bounds the run of a Mininet custom .py file
	// (--custom-timeout); 0 means DefaultCustomTimeout.
	CustomTimeout time.Duration

	label string // names the input in messages ("--topo linear,5")
}

// LimitError is an input beyond a limit; it matches ErrTooLarge.
type LimitError struct{ Msg string }

func (e *LimitError) Error() string { return e.Msg }

// Is makes a LimitError match ErrTooLarge.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

func limitErr(format string, args ...any) error {
	return &LimitError{Msg: fmt.Sprintf(format, args...)}
}

func (l Limits) named(label string) Limits {
	l.label = label
	return l
}

// checkBuiltin checks a built-in topology's node count; def names it when
// the limits carry no label (a Go caller of Linear, Tree...).
func (l Limits) checkBuiltin(def string, nodes uint64) error {
	what := l.label
	if what == "" {
		what = def
	}
	return l.CheckNodeCount(what, nodes)
}

// Defaults of Limits.
const (
	DefaultMaxFileSize   = 16 << 20
	DefaultCustomTimeout = time.Minute
	// NodeMemory is the memory one namespace node costs with its share of
	// links, shells and bookkeeping: linear,250 (500 nodes, 499 links) took
	// 658 KiB a node of MemAvailable on the development VM; 1 MiB leaves
	// room for the processes users start in nodes.
	NodeMemory = 1 << 20
	// fallbackMaxNodes applies when /proc/meminfo cannot be read.
	fallbackMaxNodes = 10000
	// minMaxNodes keeps small machines (and busy ones) usable.
	minMaxNodes = 100
)

// DefaultMaxNodes is the node count whose estimated memory (NodeMemory per
// node) fits in the machine's MemAvailable.
func DefaultMaxNodes() int {
	avail, err := memAvailable()
	if err != nil || avail <= 0 {
		return fallbackMaxNodes
	}
	return max(int(avail/NodeMemory), minMaxNodes)
}

// memAvailable returns MemAvailable from /proc/meminfo in bytes.
func memAvailable() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }() // read-only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			fs := strings.Fields(rest)
			if len(fs) == 0 {
				break
			}
			kib, err := strconv.ParseInt(fs[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kib * 1024, nil
		}
	}
	return 0, errors.New("no MemAvailable in /proc/meminfo")
}

func (l Limits) maxNodes() int {
	if l.MaxNodes == 0 {
		return DefaultMaxNodes()
	}
	if l.MaxNodes < 0 {
		return math.MaxInt
	}
	return l.MaxNodes
}

func (l Limits) maxFileSize() int64 {
	if l.MaxFileSize <= 0 {
		return DefaultMaxFileSize
	}
	return l.MaxFileSize
}

func (l Limits) customTimeout() time.Duration {
	if l.CustomTimeout <= 0 {
		return DefaultCustomTimeout
	}
	return l.CustomTimeout
}

// CheckNodeCount refuses a node count above the limit; what names the
// input in the message ("--topo tree,depth=30,fanout=2").
func (l Limits) CheckNodeCount(what string, nodes uint64) error {
	if l.MaxNodes < 0 {
		return nil
	}
	limit := l.maxNodes()
	if nodes > uint64(limit) {
		return limitErr("%s%s nodes exceeds the limit of %d (estimated %d MiB per node against MemAvailable; set --max-nodes to raise it)",
			prefix(what), countString(nodes), limit, NodeMemory>>20)
	}
	return nil
}

// LinksPerNode is how many links per allowed node a topology may have: the
// built-in topologies have at most two, a file joining two nodes by
// millions of links must not pass because its node count is small.
const LinksPerNode = 4

// CheckSize refuses a topology whose node or link count is above the limit
// (links: LinksPerNode per allowed node).
func (l Limits) CheckSize(what string, nodes, links uint64) error {
	if l.MaxNodes < 0 {
		return nil
	}
	if err := l.CheckNodeCount(what, nodes); err != nil {
		return err
	}
	limit := satMul(uint64(l.maxNodes()), LinksPerNode)
	if links > limit {
		return limitErr("%s%s links exceeds the limit of %d (%d per allowed node; set --max-nodes to raise it)",
			prefix(what), countString(links), limit, LinksPerNode)
	}
	return nil
}

// CheckMemory refuses to start what needs more memory (bytes; VMs say how
// much they take) than the machine has available. MaxNodes < 0 (--max-nodes
// -1) skips the check, as it lifts the node limit.
func (l Limits) CheckMemory(what string, bytes uint64) error {
	if l.MaxNodes < 0 {
		return nil
	}
	avail, err := memAvailable()
	if err != nil || avail <= 0 {
		return nil
	}
	if bytes > uint64(avail) {
		return limitErr("%s%d MiB of memory is more than the %d MiB available (give the VMs less memory=, or set --max-nodes -1 to skip this check)",
			prefix(what), bytes>>20, avail>>20)
	}
	return nil
}

func prefix(what string) string {
	if what == "" {
		return ""
	}
	return what + ": "
}

// countString prints a count, saturated counts as "more than 2^63".
func countString(n uint64) string {
	if n == math.MaxUint64 {
		return "more than 18446744073709551614"
	}
	return strconv.FormatUint(n, 10)
}

// readLimited reads a whole file, refusing anything above max bytes
// (device files such as /dev/zero included) without reading further.
func readLimited(path string, max int64) ([]byte, error) {
	data, err := fileio.ReadLimited(path, max)
	if errors.Is(err, fileio.ErrTooLarge) {
		return nil, limitErr("%s is larger than the limit of %s (set --max-file-size to raise it)", path, sizeString(max))
	}
	return data, err
}

func sizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Saturating arithmetic for node counts: a result that does not fit is
// math.MaxUint64, which exceeds every limit.
func satMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

func satAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
