package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// Seeds: what the host and the agent really send, plus the shapes that
// once went wrong. Crashers found by the fuzzers live in
// testdata/fuzz/<FuzzName>/ and run as part of go test.
var requestSeeds = []string{
	`{"id":1,"op":"ping"}` + "\n",
	`{"id":2,"op":"shell","line":"echo hi; false","stream":true}` + "\n",
	`{"id":3,"op":"exec","argv":["ls","-l","/"],"env":["A=1"],"dir":"/tmp","stdin":"aGVsbG8="}` + "\n",
	`{"id":4,"op":"cancel","target":3}` + "\n",
	`{"id":5,"op":"intf","mac":"52:54:00:12:34:56","name":"h1-eth0","addrs":["10.0.0.1/8"],"up":true,"mtu":9000,"timeout_ms":20000}` + "\n",
	`{"id":6,"op":"linkup","name":"h1-eth0","up":false}` + "\n",
	`{"id":7,"op":"write","path":"/tmp/x","data":"AAEC","mode":420}` + "\n",
	`{"id":8,"op":"read","path":"/etc/hostname"}` + "\n",
	`{"id":9,"op":"poweroff"}`,
	"garbage\n{\"id\":10,\"op\":\"ping\"}\n",
	`{"id":11,"op":"exec","argv":["a\u0000b"]}` + "\n",
	`{"id":12,"op":"intf","name":"../../etc","mtu":-1}` + "\n",
	`{"id":18446744073709551615,"op":"nope","mode":4294967295}` + "\n",
	"\n\n  \n",
	`{"id":1,"op":"ping"`,
}

var responseSeeds = []string{
	`{"id":1,"exit":0,"info":"6.1.0-57-amd64"}` + "\n",
	`{"id":2,"exit":0,"stdout":"aGkK","more":true}` + "\n" + `{"id":2,"exit":1}` + "\n",
	`{"id":3,"exit":-1,"error":"exec: no program","canceled":true}` + "\n",
	`{"id":8,"exit":0,"data":"!!notbase64"}` + "\n",
	`{"id":"x"}` + "\n",
	"[1,2,3]\n",
	`{"id":1,"exit":1e400}` + "\n",
}

// FuzzServerDecode feeds arbitrary bytes to the agent's request framing
// and decoding (what Serve does before it runs anything): no panic, memory
// bounded by the line limit, and a request that passes Check survives a
// round trip through the host's encoder unchanged and still passes.
func FuzzServerDecode(f *testing.F) {
	for _, s := range requestSeeds {
		f.Add([]byte(s), 64)
	}
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit = 1 + abs(limit)%4096
		lines := NewLineReader(bytes.NewReader(data), limit)
		for n := 0; ; n++ {
			if n > len(data)+1 {
				t.Fatalf("more lines than bytes")
			}
			line, err := lines.Next()
			if errors.Is(err, ErrTooLong) {
				continue
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Fatalf("reader error %v", err)
				}
				return
			}
			if len(line) > limit {
				t.Fatalf("line of %d bytes passed a limit of %d", len(line), limit)
			}
			if bytes.IndexByte(line, '\n') >= 0 {
				t.Fatalf("line contains a newline: %q", line)
			}
			req, err := DecodeRequest(line)
			if err != nil || req == nil {
				continue
			}
			enc, err := json.Marshal(req)
			if err != nil {
				t.Fatalf("re-encoding %+v: %v", req, err)
			}
			if bytes.IndexByte(enc, '\n') >= 0 {
				t.Fatalf("encoded request spans lines: %q", enc)
			}
			again, err := DecodeRequest(enc)
			if err != nil {
				t.Fatalf("round trip of %q: %v", enc, err)
			}
			enc2, _ := json.Marshal(again)
			if !bytes.Equal(enc, enc2) {
				t.Fatalf("round trip changed the request:\n%s\n%s", enc, enc2)
			}
			if again.Op == OpLinkUp && (again.Name == "" || len(again.Name) > maxIfName || strings.Contains(again.Name, "/")) {
				t.Fatalf("bad interface name passed: %q", again.Name)
			}
		}
	})
}

// FuzzClientDecode feeds arbitrary bytes to the host's response framing
// and decoding: no panic, bounded lines, stable round trips.
func FuzzClientDecode(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s), 128)
	}
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit = 1 + abs(limit)%4096
		lines := NewLineReader(bytes.NewReader(data), limit)
		for {
			line, err := lines.Next()
			if errors.Is(err, ErrTooLong) {
				continue
			}
			if err != nil {
				return
			}
			if len(line) > limit {
				t.Fatalf("line of %d bytes passed a limit of %d", len(line), limit)
			}
			resp, err := DecodeResponse(line)
			if err != nil {
				continue
			}
			enc, err := json.Marshal(resp)
			if err != nil {
				t.Fatalf("re-encoding: %v", err)
			}
			again, err := DecodeResponse(enc)
			if err != nil {
				t.Fatalf("round trip of %q: %v", enc, err)
			}
			if enc2, _ := json.Marshal(again); !bytes.Equal(enc, enc2) {
				t.Fatalf("round trip changed the response:\n%s\n%s", enc, enc2)
			}
		}
	})
}

func abs(n int) int {
	if n < 0 {
		if n == -n { // math.MinInt
			return 0
		}
		return -n
	}
	return n
}
