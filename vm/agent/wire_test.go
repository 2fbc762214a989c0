package agent

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineReaderBounds(t *testing.T) {
	in := "short\n" + strings.Repeat("x", 200000) + "\nafter\nlast"
	lr := NewLineReader(strings.NewReader(in), 1000)
	var got []string
	for {
		line, err := lr.Next()
		if errors.Is(err, ErrTooLong) {
			got = append(got, "TOO LONG")
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	if want := "short|TOO LONG|after|last"; strings.Join(got, "|") != want {
		t.Fatalf("lines %q, want %s", got, want)
	}
	if cap(lr.buf) > 100000 {
		t.Errorf("reader grew to %d bytes for a 1000-byte limit", cap(lr.buf))
	}
}

func TestRequestCheck(t *testing.T) {
	bad := []Request{
		{Op: "bogus"},
		{Op: OpExec},
		{Op: OpExec, Argv: []string{"a\x00b"}},
		{Op: OpExec, Argv: []string{"ls"}, Env: []string{"=x"}},
		{Op: OpLinkUp, Name: ""},
		{Op: OpLinkUp, Name: "a/b"},
		{Op: OpLinkUp, Name: "sixteen-bytes-xx"},
		{Op: OpIntf, MTU: 70000},
		{Op: OpIntf, Addrs: []string{"10.0.0.1"}},
		{Op: OpIntf, TimeoutMS: -1},
		{Op: OpWrite},
		{Op: OpWrite, Path: "/x", Mode: 0o17777},
		{Op: OpRead, Path: "/x\x00"},
		{Op: OpShell, Line: strings.Repeat("x", maxStringLen+1)},
	}
	for _, r := range bad {
		if err := r.Check(); err == nil {
			t.Errorf("%+.80v passed", r)
		}
	}
	good := []Request{
		{Op: OpPing}, {Op: OpShell, Line: "echo"}, {Op: OpExec, Argv: []string{"ls"}, Env: []string{"A="}},
		{Op: OpIntf, MAC: "52:54:00:00:00:01", Name: "h1-eth0", Addrs: []string{"10.0.0.1/8", "fc00::1/64"}, MTU: 9000},
		{Op: OpLinkUp, Name: "h1-eth0"}, {Op: OpWrite, Path: "/tmp/x", Mode: 0o755}, {Op: OpRead, Path: "/etc/hostname"},
		{Op: OpCancel, Target: 3}, {Op: OpPoweroff},
	}
	for _, r := range good {
		if err := r.Check(); err != nil {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

func TestServeAnswersBadRequests(t *testing.T) {
	in := strings.NewReader(`{"id":7,"op":"exec"}` + "\n" + strings.Repeat("y", MaxRequestBytes+10) + "\n" + "not json\n" + `{"id":8,"op":"ping"}` + "\n")
	var out bytes.Buffer
	s := NewServer()
	defer s.Close()
	if err := s.Serve(in, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":7`) || !strings.Contains(lines[0], "no program") || !strings.Contains(lines[1], `"id":8`) {
		t.Fatalf("responses: %q", lines)
	}
}

func TestCapBuffer(t *testing.T) {
	c := &capBuffer{max: 10}
	// A capBuffer takes every write whole, dropping what is over its max.
	for _, w := range []string{"0123456", "789abc", "def"} {
		if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if c.buf.String() != "0123456789" || c.dropped != 6 {
		t.Fatalf("kept %q, dropped %d", c.buf.String(), c.dropped)
	}
}
