package ui

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn"
)

// guestIntfTimeout bounds the one command guestInterfaces runs in a guest:
// a page must not hang on a guest that does not answer (under TCG the
// command itself takes well under a second).
const guestIntfTimeout = 5 * time.Second

// guestIntfMaxOutput bounds what the parser accepts from a guest; a guest
// with a few dozen interfaces prints a few KiB.
const guestIntfMaxOutput = 1 << 20

// guestIntfFiles are the sysfs attributes of /sys/class/net/<if>/ that
// the guest script prints, each as basename=value; all are required.
var guestIntfFiles = []string{
	"mtu", "operstate", "address",
	"statistics/rx_packets", "statistics/rx_bytes", "statistics/rx_dropped",
	"statistics/tx_packets", "statistics/tx_bytes", "statistics/tx_dropped",
}

// guestIntfScript runs in the guest's sh (busybox ash in hymn's boot
// image, which has neither ip -j nor ip -s): one "intf NAME key=value..."
// line per interface, read from sysfs with the shell's read builtin (no
// process per file, which costs under TCG), then the addresses as
// "ip -o addr show" prints them (iproute2 from the host's file system when
// it is shared, else busybox's ip: the same one-line format). Its exit
// status is ip's.
var guestIntfScript = `for d in /sys/class/net/*; do
	[ -d "$d" ] || continue
	l="intf ${d##*/}"
	for f in ` + strings.Join(guestIntfFiles, " ") + `; do
		v=
		read -r v 2>/dev/null <"$d/$f"
		l="$l ${f##*/}=$v"
	done
	echo "$l"
done
ip -o addr show`

// guestInterfaces lists the interfaces inside a VM node's guest, as the
// namespace path lists a namespace's through netlink: name, MAC, MTU,
// state, addresses and counters, sorted by name, loopback included. It
// runs one command in the guest, bounded by guestIntfTimeout.
func guestInterfaces(ctx context.Context, node hymn.Node) ([]LiveIntf, error) {
	ctx, cancel := context.WithTimeout(ctx, guestIntfTimeout)
	defer cancel()
	res, err := node.Exec(ctx, "sh", "-c", guestIntfScript)
	if err != nil {
		return nil, fmt.Errorf("node %s: reading the guest's interfaces: %w", node.Name(), err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		if len(msg) > 200 {
			msg = msg[:200] + "..."
		}
		return nil, fmt.Errorf("node %s: reading the guest's interfaces: exit status %d: %q", node.Name(), res.ExitCode, msg)
	}
	live, err := parseGuestIntfs(res.Stdout)
	if err != nil {
		return nil, fmt.Errorf("node %s: reading the guest's interfaces: %w", node.Name(), err)
	}
	return live, nil
}

// parseGuestIntfs parses guestIntfScript's output. It needs every "intf"
// line to be complete and well formed, and at least one (loopback always
// exists); it ignores lines it does not know, keys it does not need, and
// addresses of interfaces that have no "intf" line (one that appeared
// between the two halves of the script).
func parseGuestIntfs(out []byte) ([]LiveIntf, error) {
	if len(out) > guestIntfMaxOutput {
		return nil, fmt.Errorf("%d bytes of output, more than %d", len(out), guestIntfMaxOutput)
	}
	var list []LiveIntf
	byName := map[string]int{}
	type addrLine struct {
		n      int
		name   string
		prefix netip.Prefix
	}
	var addrs []addrLine
	for n, line := range strings.Split(string(out), "\n") {
		n++ // line numbers from 1
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "intf":
			li, err := parseIntfLine(f)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			if _, dup := byName[li.Name]; dup {
				return nil, fmt.Errorf("line %d: interface %s listed twice", n, li.Name)
			}
			byName[li.Name] = len(list)
			list = append(list, li)
		case len(f) >= 4 && (f[2] == "inet" || f[2] == "inet6") && strings.HasSuffix(f[0], ":"):
			p, err := parseAddrFields(f[3:])
			if err != nil {
				return nil, fmt.Errorf("line %d: interface %s: %w", n, f[1], err)
			}
			name, _, _ := strings.Cut(f[1], "@") // veth1@if5
			addrs = append(addrs, addrLine{n, name, p})
		}
	}
	if len(list) == 0 {
		return nil, errors.New("no interface listed (is /sys mounted in the guest?)")
	}
	for _, a := range addrs {
		if i, ok := byName[a.name]; ok {
			list[i].Addrs = append(list[i].Addrs, a.prefix.String())
		}
	}
	slices.SortFunc(list, func(a, b LiveIntf) int { return strings.Compare(a.Name, b.Name) })
	return list, nil
}

// parseIntfLine parses "intf NAME mtu=1500 operstate=up address=... ...".
func parseIntfLine(f []string) (LiveIntf, error) {
	if len(f) < 2 || strings.Contains(f[1], "=") {
		return LiveIntf{}, errors.New("intf line without an interface name")
	}
	li := LiveIntf{Name: f[1]}
	vals := map[string]string{}
	for _, kv := range f[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return LiveIntf{}, fmt.Errorf("interface %s: %q is not key=value", li.Name, kv)
		}
		if _, dup := vals[k]; dup {
			return LiveIntf{}, fmt.Errorf("interface %s: %s given twice", li.Name, k)
		}
		vals[k] = v
	}
	for _, file := range guestIntfFiles {
		k := file[strings.LastIndex(file, "/")+1:]
		if _, ok := vals[k]; !ok {
			return LiveIntf{}, fmt.Errorf("interface %s: no %s", li.Name, k)
		}
	}
	mtu, err := strconv.Atoi(vals["mtu"])
	if err != nil || mtu < 0 {
		return LiveIntf{}, fmt.Errorf("interface %s: mtu %q is not a number", li.Name, vals["mtu"])
	}
	li.MTU = mtu
	li.State = vals["operstate"]
	if li.State == "" || strings.Trim(li.State, "abcdefghijklmnopqrstuvwxyz") != "" {
		return LiveIntf{}, fmt.Errorf("interface %s: operstate %q is not a state", li.Name, li.State)
	}
	// Not net.ParseMAC: tunnels have 4- or 16-byte hardware addresses,
	// which netlink reports too; some devices have none (empty).
	if mac := vals["address"]; mac != "" {
		if !isHexColon(mac) {
			return LiveIntf{}, fmt.Errorf("interface %s: address %q is not a hardware address", li.Name, mac)
		}
		li.MAC = strings.ToLower(mac)
	}
	counters := []struct {
		key string
		dst *uint64
	}{
		{"rx_packets", &li.RX.Packets}, {"rx_bytes", &li.RX.Bytes}, {"rx_dropped", &li.RX.Dropped},
		{"tx_packets", &li.TX.Packets}, {"tx_bytes", &li.TX.Bytes}, {"tx_dropped", &li.TX.Dropped},
	}
	for _, c := range counters {
		v, err := strconv.ParseUint(vals[c.key], 10, 64)
		if err != nil {
			return LiveIntf{}, fmt.Errorf("interface %s: %s %q is not a counter", li.Name, c.key, vals[c.key])
		}
		*c.dst = v
	}
	return li, nil
}

// parseAddrFields parses what follows the family in an "ip -o addr" line:
// "10.0.0.1/8 brd ...", or "10.0.0.1 peer 10.0.0.2/32 ..." for a
// point-to-point address (whose prefix length is the peer's, as netlink
// reports it), or a bare address (a full-length prefix).
func parseAddrFields(f []string) (netip.Prefix, error) {
	if strings.Contains(f[0], "/") {
		p, err := netip.ParsePrefix(f[0])
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("address %q: %w", f[0], err)
		}
		return p, nil
	}
	a, err := netip.ParseAddr(f[0])
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("address %q: %w", f[0], err)
	}
	bits := a.BitLen()
	if len(f) >= 3 && f[1] == "peer" {
		if _, l, ok := strings.Cut(f[2], "/"); ok {
			if bits, err = strconv.Atoi(l); err != nil {
				return netip.Prefix{}, fmt.Errorf("peer %q: bad prefix length", f[2])
			}
		}
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("address %q: %w", f[0], err)
	}
	// Prefix masks the host bits off; the interface's own address stays.
	return netip.PrefixFrom(a, p.Bits()), nil
}

// isHexColon reports whether s is hex bytes joined by colons (aa:bb:cc),
// at most 32 of them.
func isHexColon(s string) bool {
	parts := strings.Split(s, ":")
	if len(parts) > 32 {
		return false
	}
	for _, p := range parts {
		if len(p) != 2 || strings.Trim(p, "0123456789abcdefABCDEF") != "" {
			return false
		}
	}
	return true
}
