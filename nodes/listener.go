package nodes

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A controller hymn starts is given a port that was free a moment before;
// whoever answers on that port afterwards is not necessarily the process
// hymn started (a local user may bind it in between). So hymn asks the
// kernel who listens: the TCP socket listening on the address in the
// process's network namespace (/proc/<pid>/net/tcp{,6}) must be one of the
// process's own file descriptors (/proc/<pid>/fd).

// errListenerTaken is wrapped by the error for a port another process
// listens on.
var errListenerTaken = errors.New("taken by another process")

// listener is a listening TCP socket: its inode, and whether it is bound
// to the address itself (not the wildcard).
type listener struct {
	inode uint64
	exact bool
}

// tcpListener returns the socket a connection to ip:port reaches in
// process pid's network namespace: the listener bound to ip, else one bound
// to the wildcard address (0.0.0.0, or :: for both families). ok is false
// when nothing listens there.
func tcpListener(pid int, ip netip.Addr, port int) (l listener, ok bool, err error) {
	ip = ip.Unmap()
	for _, file := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "net", file))
		if err != nil {
			if file == "tcp6" && errors.Is(err, os.ErrNotExist) {
				continue // no IPv6 in this kernel
			}
			return listener{}, false, err
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" { // TCP_LISTEN
				continue
			}
			addr, p, parsed := parseProcAddr(fs[1])
			if !parsed || p != port {
				continue
			}
			inode, err := strconv.ParseUint(fs[9], 10, 64)
			if err != nil || inode == 0 {
				continue
			}
			switch {
			case addr == ip:
				_ = f.Close() // read only
				return listener{inode: inode, exact: true}, true, nil
			case addr.IsUnspecified() && (addr.Is4() == ip.Is4() || file == "tcp6"):
				l, ok = listener{inode: inode}, true
			}
		}
		err = sc.Err()
		_ = f.Close() // read only
		if err != nil {
			return listener{}, false, err
		}
	}
	return l, ok, nil
}

// parseProcAddr decodes /proc/net/tcp's "0100007F:19FD": the address in
// 32-bit words of host (little-endian) order, the port in hex.
func parseProcAddr(s string) (netip.Addr, int, bool) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.Addr{}, 0, false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, false
	}
	b, err := hex.DecodeString(a)
	if err != nil || (len(b) != 4 && len(b) != 16) {
		return netip.Addr{}, 0, false
	}
	for i := 0; i < len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	addr, _ := netip.AddrFromSlice(b)
	return addr.Unmap(), int(port), true
}

// holds reports whether process pid has the socket with inode open.
func holds(pid int, inode uint64) (bool, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, err
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	for _, e := range entries {
		if t, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && t == want {
			return true, nil
		}
	}
	return false, nil
}

// holderOf names a process holding the socket with inode ("pid 123
// (nc)"), for messages; "" if none is found (it may be in another user's
// process hymn cannot read, or gone).
func holderOf(inode uint64) string {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return ""
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if ok, _ := holds(pid, inode); ok {
			comm, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
			return fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(string(comm)))
		}
	}
	return ""
}

// checkListener reports whether process pid is the one listening on
// ip:port: listening is false while nothing listens there yet; an error
// wrapping errListenerTaken names the process that does instead.
func checkListener(pid int, ip netip.Addr, port int) (listening bool, err error) {
	l, ok, err := tcpListener(pid, ip, port)
	if err != nil || !ok {
		return false, err
	}
	mine, err := holds(pid, l.inode)
	if err != nil {
		return false, err
	}
	if mine {
		return true, nil
	}
	who := holderOf(l.inode)
	if who == "" {
		who = "a process hymn cannot see"
	}
	return false, fmt.Errorf("%w: %s holds its listening socket", errListenerTaken, who)
}
