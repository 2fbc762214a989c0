package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
)

// Size limits of the protocol. A message is one line of JSON; a line
// longer than its limit is skipped whole (the server) or ends the
// connection (the host), so neither side ever holds more than this much
// of one message in memory, whatever the other side sends.
const (
	// MaxRequestBytes bounds one request line: room for MaxOutputBytes of
	// stdin or file data in base64.
	MaxRequestBytes = 40 << 20
	// MaxResponseBytes bounds one response line.
	MaxResponseBytes = 64 << 20
	// MaxOutputBytes bounds the bytes one response carries (stdout plus
	// stderr, or a file's data): collected output beyond it is dropped and
	// the response says so in Error.
	MaxOutputBytes = 24 << 20

	maxArgs      = 4096    // Argv and Env entries
	maxAddrs     = 256     // Addrs of one OpIntf
	MaxTimeoutMS = 600000  // 10 minutes: the longest wait a request may ask for
	maxMTU       = 65535   // what the kernel accepts on a veth
	maxIfName    = 15      // IFNAMSIZ - 1
	maxStringLen = 1 << 20 // Line, one argument, Path...
	maxMode      = 0o7777  // permission and set-id bits
)

// ErrTooLong is returned by LineReader.Next for a line over its limit.
var ErrTooLong = errors.New("agent protocol: message too long")

// LineReader splits a stream into lines of at most max bytes. A longer
// line is skipped up to its newline and reported as ErrTooLong, so the
// reader stays in step with the stream and its memory stays bounded.
type LineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// NewLineReader reads lines of at most max bytes from r.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its newline. The slice is valid
// until the next call. A last line without a newline is returned before
// io.EOF.
func (l *LineReader) Next() ([]byte, error) {
	l.buf = l.buf[:0]
	tooLong := false
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(l.buf)+len(chunk) > l.max+1 { // +1: the newline
				tooLong = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			if tooLong {
				return nil, ErrTooLong
			}
			return bytes.TrimSuffix(l.buf, []byte{'\n'}), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && (tooLong || len(l.buf) > l.max):
			// The +1 above was for a newline this last line lacks.
			return nil, ErrTooLong
		case errors.Is(err, io.EOF) && len(l.buf) > 0:
			return l.buf, nil
		default:
			return nil, err
		}
	}
}

// DecodeRequest parses one request line and checks it (Check). On a
// failed check the request is returned too, so the server can answer its
// ID with the error.
func DecodeRequest(line []byte) (*Request, error) {
	req := new(Request)
	if err := json.Unmarshal(line, req); err != nil {
		return nil, fmt.Errorf("agent request: %w", err)
	}
	if err := req.Check(); err != nil {
		return req, err
	}
	return req, nil
}

// DecodeResponse parses one response line.
func DecodeResponse(line []byte) (*Response, error) {
	resp := new(Response)
	if err := json.Unmarshal(line, resp); err != nil {
		return nil, fmt.Errorf("agent response: %w", err)
	}
	return resp, nil
}

// Check validates a request's fields for its operation: known operation,
// bounded counts and lengths, no NUL bytes in what becomes a path, an
// argument or an environment entry, interface names the kernel accepts,
// MTU, mode and timeout in range.
func (r *Request) Check() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("agent request %d (%s): %s", r.ID, r.Op, fmt.Sprintf(format, args...))
	}
	str := func(field, s string) error {
		if len(s) > maxStringLen {
			return bad("%s is %d bytes (at most %d)", field, len(s), maxStringLen)
		}
		if strings.IndexByte(s, 0) >= 0 {
			return bad("%s contains a NUL byte", field)
		}
		return nil
	}
	list := func(field string, l []string) error {
		if len(l) > maxArgs {
			return bad("%s has %d entries (at most %d)", field, len(l), maxArgs)
		}
		for _, s := range l {
			if err := str(field, s); err != nil {
				return err
			}
		}
		return nil
	}
	if err := list("argv", r.Argv); err != nil {
		return err
	}
	if err := list("env", r.Env); err != nil {
		return err
	}
	for _, e := range r.Env {
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return bad("env entry %q is not NAME=value", e)
		}
	}
	for field, s := range map[string]string{"dir": r.Dir, "line": r.Line, "path": r.Path, "mac": r.MAC, "name": r.Name} {
		if err := str(field, s); err != nil {
			return err
		}
	}
	if len(r.Stdin) > MaxOutputBytes || len(r.Data) > MaxOutputBytes {
		return bad("stdin or data over %d bytes", MaxOutputBytes)
	}
	if r.TimeoutMS < 0 || r.TimeoutMS > MaxTimeoutMS {
		return bad("timeout_ms=%d out of range 0..%d", r.TimeoutMS, MaxTimeoutMS)
	}
	if r.MTU < 0 || r.MTU > maxMTU {
		return bad("mtu=%d out of range 0..%d", r.MTU, maxMTU)
	}
	if r.Mode > maxMode {
		return bad("mode=%#o is not a permission mode", r.Mode)
	}
	if len(r.Addrs) > maxAddrs {
		return bad("%d addresses (at most %d)", len(r.Addrs), maxAddrs)
	}
	switch r.Op {
	case OpPing, OpPoweroff, OpCancel:
	case OpExec:
		if len(r.Argv) == 0 || r.Argv[0] == "" {
			return bad("no program")
		}
	case OpShell:
	case OpIntf:
		if r.Name != "" {
			if err := checkIfName(r.Name); err != nil {
				return bad("%v", err)
			}
		}
		for _, a := range r.Addrs {
			if _, err := netip.ParsePrefix(a); err != nil {
				return bad("address %q: %v", a, err)
			}
		}
	case OpLinkUp:
		if err := checkIfName(r.Name); err != nil {
			return bad("%v", err)
		}
	case OpWrite, OpRead:
		if r.Path == "" {
			return bad("no path")
		}
	default:
		return bad("unknown operation")
	}
	return nil
}

// checkIfName accepts what the kernel's dev_valid_name accepts.
func checkIfName(name string) error {
	if name == "" || len(name) > maxIfName || name == "." || name == ".." {
		return fmt.Errorf("interface name %q: 1 to %d bytes, and not \".\" or \"..\"", name, maxIfName)
	}
	if strings.ContainsAny(name, "/: \t\n\r\v\f") {
		return fmt.Errorf("interface name %q contains '/', ':' or white space", name)
	}
	return nil
}
