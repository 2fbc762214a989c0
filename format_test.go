package hymn

import (
	"testing"
	"time"
)

func TestFormatBps(t *testing.T) {
	for bps, want := range map[float64]string{
		0:        "0.00 bits/sec",
		9570000:  "9.57 Mbits/sec",
		10.1e6:   "10.1 Mbits/sec",
		16.04e9:  "16.0 Gbits/sec",
		123.4e6:  "123 Mbits/sec",
		999.9:    "1000 bits/sec",
		1000:     "1.00 Kbits/sec",
		2.5e12:   "2.50 Tbits/sec",
		94.96e15: "94960 Tbits/sec",
	} {
		if got := FormatBps(bps); got != want {
			t.Errorf("FormatBps(%g) = %q, want %q", bps, got, want)
		}
	}
}

func TestParsePing(t *testing.T) {
	ok := `PING 10.0.0.2 (10.0.0.2) 56(84) bytes of data.
64 bytes from 10.0.0.2: icmp_seq=1 ttl=64 time=0.061 ms

--- 10.0.0.2 ping statistics ---
1 packets transmitted, 1 received, 0% packet loss, time 0ms
rtt min/avg/max/mdev = 0.061/0.062/0.063/0.001 ms
`
	r := parsePing(ok)
	if r.Sent != 1 || r.Received != 1 || r.RTTMin != 61*time.Microsecond || r.RTTAvg != 62*time.Microsecond || r.RTTMax != 63*time.Microsecond || r.RTTMdev != time.Microsecond {
		t.Errorf("parsePing(ok) = %+v", r)
	}
	lost := "1 packets transmitted, 0 received, 100% packet loss, time 0ms\n"
	if r := parsePing(lost); r.Sent != 1 || r.Received != 0 {
		t.Errorf("parsePing(lost) = %+v", r)
	}
	for _, s := range []string{"connect: Network is unreachable\n", "From 10.0.0.1 icmp_seq=1 Destination Host Unreachable\n1 packets transmitted, 0 received", "garbage"} {
		if r := parsePing(s); r.Sent != 1 || r.Received != 0 {
			t.Errorf("parsePing(%q) = %+v, want 1 sent 0 received", s, r)
		}
	}
}
