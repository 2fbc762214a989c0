package cli

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/topo"
)

// hymn has no Python interpreter; py and px understand the handful of
// expressions Mininet's walkthrough and everyday use need, and say so
// plainly for anything else.
const pyUnsupported = "*** py/px: hymn understands only a small Python subset: node.IP(), node.MAC(), node.intfList(), node.name, node.cmd('...'), net.hosts, net.switches, net.addHost('h3'), net.addSwitch('s3'), net.addLink(a, b), waitListening(...); not: %s\n"

var (
	pyCallRE   = regexp.MustCompile(`^([A-Za-z_][\w.-]*?)\.(IP|MAC|intfList|intfNames|cmd|name)(\((.*)\))?$`)
	pyNetRE    = regexp.MustCompile(`^net\.(hosts|switches|addHost|addSwitch|addLink)(\((.*)\))?$`)
	pyWaitRE   = regexp.MustCompile(`^waitListening\((.*)\)$`)
	pyImportRE = regexp.MustCompile(`^(from\s+\S+\s+)?import\s+`)
)

func (s *shell) doPy(ctx context.Context, args string) bool {
	out, err := s.evalPy(ctx, strings.TrimSpace(args))
	if err != nil {
		s.outf("%v\n", err)
		return false
	}
	if out != "" {
		s.out(out + "\n")
	}
	return false
}

func (s *shell) doPx(ctx context.Context, args string) bool {
	for _, stmt := range strings.Split(args, ";") {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" || pyImportRE.MatchString(stmt) {
			continue
		}
		if strings.HasPrefix(stmt, "print ") || strings.HasPrefix(stmt, "print(") {
			out, err := s.evalPy(ctx, strings.Trim(strings.TrimPrefix(stmt, "print"), " ()"))
			if err != nil {
				s.outf("%v\n", err)
				return false
			}
			s.out(out + "\n")
			continue
		}
		if _, err := s.evalPy(ctx, stmt); err != nil {
			s.outf("%v\n", err)
			return false
		}
	}
	return false
}

// pyArgs splits a call's arguments into positional values and keywords,
// unquoting strings.
func pyArgs(raw string) (pos []string, kw map[string]string) {
	kw = map[string]string{}
	if strings.TrimSpace(raw) == "" {
		return nil, kw
	}
	for _, a := range strings.Split(raw, ",") {
		a = strings.TrimSpace(a)
		if k, v, ok := strings.Cut(a, "="); ok && !strings.ContainsAny(k, `'"`) {
			kw[strings.TrimSpace(k)] = unquote(strings.TrimSpace(v))
			continue
		}
		pos = append(pos, unquote(a))
	}
	return pos, kw
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '"') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

func (s *shell) evalPy(ctx context.Context, expr string) (string, error) {
	if m := pyNetRE.FindStringSubmatch(expr); m != nil {
		return s.evalNet(ctx, m[1], m[3])
	}
	if m := pyWaitRE.FindStringSubmatch(expr); m != nil {
		return "", s.waitListening(ctx, m[1])
	}
	if m := pyCallRE.FindStringSubmatch(expr); m != nil {
		return s.evalNode(ctx, m[1], m[2], m[3] != "", m[4])
	}
	if p := s.net.Plan().Node(expr); p != nil {
		return strings.TrimSpace(s.nodeRepr(p)), nil
	}
	if expr == "net" {
		return fmt.Sprintf("<hymn.Network run %s>", s.net.RunID()), nil
	}
	return "", fmt.Errorf(strings.TrimSuffix(pyUnsupported, "\n"), expr)
}

func (s *shell) evalNet(ctx context.Context, attr, rawArgs string) (string, error) {
	pos, _ := pyArgs(rawArgs)
	switch attr {
	case "hosts", "switches":
		list := s.net.Hosts()
		if attr == "switches" {
			list = s.net.Switches()
		}
		var reprs []string
		for _, n := range list {
			reprs = append(reprs, strings.TrimSpace(s.nodeRepr(n)))
		}
		return "[" + strings.Join(reprs, ", ") + "]", nil
	case "addHost", "addSwitch":
		if len(pos) < 1 {
			return "", fmt.Errorf("net.%s needs a name", attr)
		}
		kind := topo.KindHost
		if attr == "addSwitch" {
			kind = topo.KindSwitch
		}
		if err := s.net.AddNode(ctx, pos[0], kind, nil); err != nil {
			return "", err
		}
		return "", nil
	case "addLink":
		if len(pos) != 2 {
			return "", fmt.Errorf("net.addLink needs two nodes")
		}
		l, err := s.net.AddLink(ctx, pos[0], pos[1], nil)
		if err != nil {
			return "", err
		}
		return l.String(), nil
	}
	return "", fmt.Errorf(strings.TrimSuffix(pyUnsupported, "\n"), "net."+attr)
}

func (s *shell) evalNode(ctx context.Context, name, method string, call bool, rawArgs string) (string, error) {
	p := s.net.Plan().Node(name)
	if p == nil {
		return "", fmt.Errorf("name '%s' is not defined", name)
	}
	pos, _ := pyArgs(rawArgs)
	intf := p.DefaultIntf()
	if len(pos) > 0 && (method == "IP" || method == "MAC") {
		intf = nil
		for _, i := range p.Intfs {
			if i.Name == pos[0] {
				intf = i
			}
		}
	}
	switch method {
	case "name":
		return p.Name, nil
	case "IP":
		if intf == nil || !intf.IP.IsValid() {
			return "None", nil
		}
		return intf.IP.Addr().String(), nil
	case "MAC":
		if intf == nil {
			return "None", nil
		}
		return s.macFromLink(ctx, name, intf.Name)
	case "intfList", "intfNames":
		var parts []string
		for _, n := range intfNames(p) {
			if method == "intfList" {
				n = "<Intf " + n + ">"
			} else {
				n = "'" + n + "'"
			}
			parts = append(parts, n)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case "cmd":
		node, _ := s.net.Node(name)
		return node.Cmd(ctx, strings.Join(pos, " "))
	}
	return "", fmt.Errorf(strings.TrimSuffix(pyUnsupported, "\n"), name+"."+method)
}

// macFromLink reads an interface's MAC through ip(8) in the node. Not
// /sys/class/net: a process in a node's namespace still sees the root
// namespace's sysfs, where a same-named interface may exist.
func (s *shell) macFromLink(ctx context.Context, node, intf string) (string, error) {
	n, _ := s.net.Node(node)
	res, err := n.Exec(ctx, "ip", "-o", "link", "show", intf)
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(res.Stdout))
	for i, w := range f {
		if w == "link/ether" && i+1 < len(f) {
			return f[i+1], nil
		}
	}
	return "None", nil
}

// waitListening is Mininet's util.waitListening(client, server='127.0.0.1',
// port=80, timeout=None): poll from client until server:port accepts.
func (s *shell) waitListening(ctx context.Context, rawArgs string) error {
	pos, kw := pyArgs(rawArgs)
	get := func(i int, key, def string) string {
		if v, ok := kw[key]; ok {
			return v
		}
		if i < len(pos) {
			return pos[i]
		}
		return def
	}
	client, server := get(0, "client", ""), get(1, "server", "127.0.0.1")
	port, err := strconv.Atoi(get(2, "port", "80"))
	if err != nil {
		return fmt.Errorf("waitListening: bad port")
	}
	timeout := time.Duration(0)
	if t := get(3, "timeout", "None"); t != "None" {
		secs, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return fmt.Errorf("waitListening: bad timeout %q", t)
		}
		timeout = time.Duration(secs * float64(time.Second))
	}
	node, err := s.net.NsNode(client)
	if err != nil {
		return fmt.Errorf("waitListening: client %s: %v", client, err)
	}
	if ip, err := s.net.IP(server); err == nil {
		server = ip.String()
	}
	addr := net.JoinHostPort(server, strconv.Itoa(port))
	start := time.Now()
	for {
		var conn net.Conn
		err := netnsx.Do(node.NsHandle(), func() error {
			var err error
			conn, err = net.DialTimeout("tcp", addr, 500*time.Millisecond)
			return err
		})
		if err == nil {
			conn.Close()
			return nil
		}
		if timeout > 0 && time.Since(start) > timeout {
			return fmt.Errorf("waitListening: %s did not listen on %s within %v", server, addr, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
