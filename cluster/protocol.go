package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// Command is a line from the coordinator to a worker.
type Command struct {
	Cmd string `json:"cmd"` // link, relink, stats, exec, rtt, api, ready (say it again), stop
	ID  int    `json:"id,omitempty"`
	// link: every worker's address, by worker number.
	Peers []string `json:"peers,omitempty"`
	// relink: the worker that was replaced and its new address; the cut
	// links shared with it are re-created toward that address.
	Peer    *int   `json:"peer,omitempty"`
	Address string `json:"address,omitempty"`
	// exec: the node and the program with its arguments (no shell).
	Node string   `json:"node,omitempty"`
	Argv []string `json:"argv,omitempty"`
	// exec: how long it may run, in seconds (0: DefaultExecTimeout).
	Timeout float64 `json:"timeout,omitempty"`
	// rtt: Count ICMP echoes from Node to the address Dst, GapMs apart;
	// the worker measures each to the ns (hymn.Network.RTTSeries).
	Dst   string  `json:"dst,omitempty"`
	Count int     `json:"count,omitempty"`
	GapMs float64 `json:"gap_ms,omitempty"`
	// api: one request of the live view's API for the worker's part
	// (GET or POST, a target under /api/, a JSON body for POST).
	Method string `json:"method,omitempty"`
	Target string `json:"target,omitempty"`
	Body   []byte `json:"body,omitempty"`
}

// Event is a line from a worker to the coordinator.
type Event struct {
	Event  string `json:"event"` // ready, linked, relinked, stats, exec, rtt, api, error, stopped
	ID     int    `json:"id,omitempty"`
	Worker int    `json:"worker"`
	// ready: the worker's address (where its tunnels end), its network's
	// run id, its nodes and its internal links.
	Address string   `json:"address,omitempty"`
	Run     string   `json:"run,omitempty"`
	Nodes   []string `json:"nodes,omitempty"`
	Links   int      `json:"links,omitempty"`
	// linked, relinked, stats: the cut links with their tunnels'
	// counters (relinked: only the re-created ones).
	Cut []CutStats `json:"cut,omitempty"`
	// exec: the exit status and output (each at most MaxOutput bytes).
	Exit   *int   `json:"exit,omitempty"`
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// rtt: the round-trip time of each echo answered, in µs (to the ns).
	RTTMicros []float64 `json:"rtt_us,omitempty"`
	// api: the answer's status, Content-Type and Content-Disposition, and
	// body (at most MaxAPIBody bytes).
	Status int               `json:"status,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body,omitempty"`
	// error: what went wrong; Fatal says the worker is tearing down.
	Error string `json:"error,omitempty"`
	Fatal bool   `json:"fatal,omitempty"`
	// Millis is how long the step took (ready: the build, linked: the
	// tunnels, stopped: the teardown).
	Millis int64 `json:"ms,omitempty"`
}

// MaxLine bounds one protocol line in either direction: a longer one is
// refused rather than buffered without limit.
const MaxLine = 4 << 20

// MaxAPIBody bounds an api answer's body: encoded in base64 it must fit
// in a line.
const MaxAPIBody = MaxLine/4*3 - 64<<10

// MaxOutput bounds each of an exec's stdout and stderr in an event.
const MaxOutput = 1 << 20

// lineReader reads JSON lines of at most MaxLine bytes.
type lineReader struct{ sc *bufio.Scanner }

func newLineReader(r io.Reader) *lineReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	return &lineReader{sc}
}

// next decodes the next non-empty line into v. io.EOF at the end; a line
// that is not one JSON object of the right shape is an error that names it
// (the reader can go on).
func (l *lineReader) next(v any) (err error, fatal bool) {
	for l.sc.Scan() {
		line := l.sc.Bytes()
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			return fmt.Errorf("bad line %q: %v", clip(string(line), 120), err), false
		}
		if dec.More() {
			return fmt.Errorf("bad line %q: more than one JSON value", clip(string(line), 120)), false
		}
		return nil, false
	}
	if err := l.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("a line longer than %d bytes", MaxLine), true
		}
		return err, true
	}
	return io.EOF, true
}

// lineWriter writes JSON lines, one writer at a time.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

func clipBytes(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + fmt.Sprintf("\n[%d more bytes]", len(b)-n)
}
