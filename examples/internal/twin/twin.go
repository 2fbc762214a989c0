// Package twin holds what the digital-twin examples share: a ping series
// with send times, CSV output and a small SVG line chart for docs/.
package twin

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/measure"
)

// Echo is one ping reply.
type Echo struct {
	Seq  int
	Sent time.Duration // from the experiment's time zero
	RTT  time.Duration
	// Hold is how long the responder held the probe before replying
	// (UDPEcho; not part of RTT): the reply entered the way back at
	// Sent + the way out + Hold.
	Hold time.Duration
}

// "[1732960000.123456] 64 bytes from 10.0.0.2: icmp_seq=3 ttl=64 time=20.3 ms"
var pingLine = regexp.MustCompile(`^\[([0-9.]+)\] .*icmp_seq=([0-9]+) .*time=([0-9.]+) ms`)

// PingSeries pings dst from src count times every interval and returns
// the replies in arrival order, with their send times relative to zero.
// ping sends on a fixed schedule, echo k at t₁ + (k−1)·interval; the RTT
// is measured with kernel stamps, but the time ping prints (-D) is when it
// got round to printing, late by however long a loaded machine kept it
// from running. So t₁ is the smallest print stamp − RTT − (k−1)·interval
// over all echoes: the least delayed print.
func PingSeries(ctx context.Context, n *hymn.Network, src, dst string, count int, interval time.Duration, zero time.Time) ([]Echo, error) {
	node, err := n.Node(src)
	if err != nil {
		return nil, err
	}
	ip, err := n.IP(dst)
	if err != nil {
		return nil, err
	}
	res, err := node.Exec(ctx, "ping", "-D", "-n", "-i", strconv.FormatFloat(interval.Seconds(), 'f', 3, 64),
		"-c", strconv.Itoa(count), "-W", "3", ip.String())
	if err != nil {
		return nil, err
	}
	var out []Echo
	var anchor time.Duration = math.MaxInt64
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		m := pingLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		stamp, _ := strconv.ParseFloat(m[1], 64)
		seq, _ := strconv.Atoi(m[2])
		rtt, _ := strconv.ParseFloat(m[3], 64)
		e := Echo{Seq: seq, RTT: time.Duration(rtt * 1e6)}
		e.Sent = time.Unix(0, int64(stamp*1e9)).Sub(zero) - e.RTT
		anchor = min(anchor, e.Sent-time.Duration(seq-1)*interval)
		out = append(out, e)
	}
	for i := range out {
		out[i].Sent = anchor + time.Duration(out[i].Seq-1)*interval
	}
	return out, nil
}

// WriteCSV writes a header and rows of numbers.
func WriteCSV(path string, header []string, rows [][]float64) error {
	var b strings.Builder
	b.WriteString(strings.Join(header, ",") + "\n")
	for _, r := range rows {
		for i, v := range r {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(v, 'g', 6, 64))
		}
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Series is one line of a plot.
type Series struct {
	Name  string
	X, Y  []float64
	Step  bool // draw as steps (a schedule) instead of points joined by lines
	Dots  bool // draw points only
	Color string
}

// Plot is a line chart.
type Plot struct {
	Title, XLabel, YLabel string
	Series                []Series
}

// SVG renders the plot, 720×360, axes from 0.
func (p Plot) SVG(w io.Writer) error {
	const W, H, l, r, t, b = 720.0, 360.0, 60.0, 20.0, 36.0, 48.0
	xmax, ymax := 0.0, 0.0
	for _, s := range p.Series {
		for i := range s.X {
			xmax, ymax = math.Max(xmax, s.X[i]), math.Max(ymax, s.Y[i])
		}
	}
	xmax, ymax = nice(xmax), nice(ymax*1.1)
	px := func(x float64) float64 { return l + x/xmax*(W-l-r) }
	py := func(y float64) float64 { return H - b - y/ymax*(H-t-b) }
	var o strings.Builder
	fmt.Fprintf(&o, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(&o, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&o, `<text x="%.0f" y="20" text-anchor="middle" font-size="14">%s</text>`+"\n", W/2, esc(p.Title))
	for i := 0; i <= 5; i++ {
		x, y := xmax*float64(i)/5, ymax*float64(i)/5
		fmt.Fprintf(&o, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", l, py(y), W-r, py(y))
		fmt.Fprintf(&o, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", l-4, py(y)+4, trim(y))
		fmt.Fprintf(&o, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), H-b+16, trim(x))
	}
	fmt.Fprintf(&o, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", l, H-b, W-r, H-b)
	fmt.Fprintf(&o, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="black"/>`+"\n", l, t, l, H-b)
	fmt.Fprintf(&o, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", (l+W-r)/2, H-12, esc(p.XLabel))
	fmt.Fprintf(&o, `<text transform="translate(16 %.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (t+H-b)/2, esc(p.YLabel))
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e"}
	for k, s := range p.Series {
		c := s.Color
		if c == "" {
			c = colors[k%len(colors)]
		}
		if s.Dots {
			for i := range s.X {
				fmt.Fprintf(&o, `<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`+"\n", px(s.X[i]), py(s.Y[i]), c)
			}
		} else {
			var pts []string
			for i := range s.X {
				if s.Step && i > 0 {
					pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i-1])))
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
			}
			fmt.Fprintf(&o, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		}
		fmt.Fprintf(&o, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			W-r-200, t+4+float64(k)*16, c, W-r-186, t+13+float64(k)*16, esc(s.Name))
	}
	o.WriteString("</svg>\n")
	_, err := io.WriteString(w, o.String())
	return err
}

// WriteSVG writes the plot to a file.
func (p Plot) WriteSVG(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := p.SVG(f); err != nil {
		_ = f.Close() // the write error is the one to report
		return err
	}
	return f.Close()
}

func nice(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func trim(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// UDPEcho sends count UDP probes from src to an echo responder on dst,
// one every interval, and returns the echoes in arrival order. Unlike
// ping it knows each probe's send time (it took it just before sending),
// and on a loaded machine it keeps this process's own delays out of the
// RTT: replies are timed by the kernel's receive stamps, and the
// responder reports how long it held each probe (from its kernel stamp to
// its reply), which is subtracted.
func UDPEcho(ctx context.Context, n *hymn.Network, src, dst string, count int, interval time.Duration, zero time.Time) ([]Echo, error) {
	sn, err := n.Node(src)
	if err != nil {
		return nil, err
	}
	dn, err := n.Node(dst)
	if err != nil {
		return nil, err
	}
	ip, err := n.IP(dst)
	if err != nil {
		return nil, err
	}
	listen := func(node hymn.Node) (*net.UDPConn, error) {
		return measure.ListenStamped(node.NsHandle(), netip.AddrPort{})
	}
	server, err := listen(dn)
	if err != nil {
		return nil, err
	}
	// UDP sockets: closing them loses nothing.
	defer func() { _ = server.Close() }()
	client, err := listen(sn)
	if err != nil {
		return nil, err
	}
	defer func() { _ = client.Close() }()
	go measure.Echo(server) // sends every datagram back with its hold time
	to := &net.UDPAddr{IP: net.IP(ip.AsSlice()), Port: server.LocalAddr().(*net.UDPAddr).Port}
	// Send times twice: on the monotonic clock since zero (where the
	// schedule's time runs) and on the wall clock, for the RTT against
	// the kernel's receive stamps, which are wall-clock times.
	sent := make([]atomic.Int64, count) // written before the probe leaves, read when it is back
	sentWall := make([]atomic.Int64, count)
	var out []Echo
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf, oob := make([]byte, 64), make([]byte, 128)
		for len(out) < count {
			// Fails only on a closed socket, and then the read fails too.
			_ = client.SetReadDeadline(time.Now().Add(3 * time.Second))
			k, oobn, _, _, err := client.ReadMsgUDP(buf, oob)
			if err != nil {
				return
			}
			rx := measure.KernelStamp(oob[:oobn])
			if rx == 0 {
				rx = time.Now().UnixNano()
			}
			if k < 16 {
				continue
			}
			seq := int(binary.BigEndian.Uint32(buf))
			if seq < 1 || seq > count {
				continue
			}
			hold := time.Duration(binary.BigEndian.Uint64(buf[8:]))
			t := time.Duration(sent[seq-1].Load())
			rtt := time.Duration(rx-sentWall[seq-1].Load()) - hold
			out = append(out, Echo{Seq: seq, Sent: t, RTT: rtt, Hold: hold})
		}
	}()
	start := time.Now()
	msg := make([]byte, 32)
	for k := 1; k <= count; k++ {
		time.Sleep(time.Until(start.Add(time.Duration(k-1) * interval)))
		if ctx.Err() != nil {
			break
		}
		binary.BigEndian.PutUint32(msg, uint32(k))
		now := time.Now()
		sent[k-1].Store(int64(now.Sub(zero)))
		sentWall[k-1].Store(now.UnixNano())
		if _, err := client.WriteToUDP(msg, to); err != nil {
			return nil, err
		}
	}
	<-done
	return out, ctx.Err()
}
