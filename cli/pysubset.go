package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
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
const pyUnsupported = "*** py/px: hymn understands only a small Python subset: node.IP(), node.MAC(), node.intfList(), node.name, node.cmd('...'), net.hosts, net.switches, net.addHost('h3'), net.addSwitch('s3'), net.addLink(a, b), net.delHost(h3), net.delSwitch(s3), net.delLinkBetween(a, b), waitListening(...); not: %s\n"

var (
	pyCallRE   = regexp.MustCompile(`^([A-Za-z_][\w.-]*?)\.(IP|MAC|intfList|intfNames|cmd|name)(\((.*)\))?$`)
	pyNetRE    = regexp.MustCompile(`^net\.(hosts|switches|addHost|addSwitch|addLink|delHost|delSwitch|delNode|delLinkBetween)(\((.*)\))?$`)
	pyWaitRE   = regexp.MustCompile(`^waitListening\((.*)\)$`)
	pyImportRE = regexp.MustCompile(`^(from\s+\S+\s+)?import\s+`)
)

func (s *shell) doPy(ctx context.Context, args string) bool {
	// Ctrl-C ends what py runs (h1.cmd('sleep 1000')), not the network.
	cctx, done := s.intr.commandContext(ctx)
	defer done()
	out, streamed, err := s.evalPy(cctx, strings.TrimSpace(args), logWriter{s.lg})
	if err != nil {
		s.pyError(ctx, err)
		return false
	}
	if out != "" || streamed {
		s.out(out + "\n")
	}
	return false
}

func (s *shell) doPx(ctx context.Context, args string) bool {
	cctx, done := s.intr.commandContext(ctx)
	defer done()
	for _, st := range parsePx(args) {
		var w io.Writer = io.Discard
		if st.print {
			w = logWriter{s.lg}
		}
		out, _, err := s.evalPy(cctx, st.expr, w)
		if err != nil {
			s.pyError(ctx, err)
			return false
		}
		if st.print {
			s.out(out + "\n")
		}
	}
	return false
}

// pyError reports an error of py or px; an interrupted command gets a line
// break, as a node command does.
func (s *shell) pyError(ctx context.Context, err error) {
	if errors.Is(err, context.Canceled) && ctx.Err() == nil {
		s.out("\n")
		return
	}
	s.outf("%v\n", err)
}

// pxStmt is one statement of a px line: an expression, printed or not.
type pxStmt struct {
	expr  string
	print bool
}

// parsePx splits a px line into statements at semicolons outside quotes,
// dropping empty ones and imports (hymn has every name Mininet scripts
// import).
func parsePx(line string) []pxStmt {
	var stmts []pxStmt
	for _, stmt := range splitOutsideQuotes(line, ';') {
		stmt = strings.TrimSpace(stmt)
		if stmt == "" || pyImportRE.MatchString(stmt) {
			continue
		}
		if rest, ok := strings.CutPrefix(stmt, "print"); ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, "(")) {
			rest = strings.TrimSpace(rest)
			if strings.HasPrefix(rest, "(") && strings.HasSuffix(rest, ")") {
				rest = strings.TrimSpace(rest[1 : len(rest)-1])
			}
			stmts = append(stmts, pxStmt{expr: rest, print: true})
			continue
		}
		stmts = append(stmts, pxStmt{expr: stmt})
	}
	return stmts
}

// splitOutsideQuotes splits s at sep bytes that are not inside a Python
// string literal ('...' or "..." with backslash escapes).
func splitOutsideQuotes(s string, sep byte) []string {
	var parts []string
	var quote byte
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == '\\':
			i++ // the escaped byte cannot end the literal
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '\'' || c == '"':
			quote = c
		case c == sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// pyArgs splits a call's arguments into positional values and keywords,
// unquoting strings.
func pyArgs(raw string) (pos []string, kw map[string]string) {
	kw = map[string]string{}
	if strings.TrimSpace(raw) == "" {
		return nil, kw
	}
	for _, a := range splitOutsideQuotes(raw, ',') {
		a = strings.TrimSpace(a)
		if k, v, ok := strings.Cut(a, "="); ok && isPyName(strings.TrimSpace(k)) {
			kw[strings.TrimSpace(k)] = unquote(strings.TrimSpace(v))
			continue
		}
		pos = append(pos, unquote(a))
	}
	return pos, kw
}

// isPyName reports whether s is a Python identifier (ASCII).
func isPyName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// unquote turns a Python string literal into its value (the escapes a
// command line needs: \\ \' \" \n \t); anything else is returned as is.
func unquote(s string) string {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') || s[len(s)-1] != s[0] {
		return s
	}
	body := s[1 : len(s)-1]
	if !strings.Contains(body, "\\") {
		return body
	}
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 == len(body) {
			b.WriteByte(c)
			continue
		}
		i++
		switch body[i] {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case '\\', '\'', '"':
			b.WriteByte(body[i])
		default:
			b.WriteByte('\\')
			b.WriteByte(body[i])
		}
	}
	return b.String()
}

// pyKind says which of the understood forms an expression has.
type pyKind int

const (
	pyOther    pyKind = iota // a bare name (a node, net) or unsupported
	pyNet                    // net.<attr>[(args)]
	pyWait                   // waitListening(args)
	pyNodeCall               // <node>.<method>[(args)]
)

// pyExpr is a parsed py expression.
type pyExpr struct {
	kind   pyKind
	target string // the node, or net's attribute
	method string
	call   bool
	args   string // between the parentheses, unparsed (see pyArgs)
}

// parsePy recognizes the expression forms py understands; it does not
// look anything up, so it can be tested and fuzzed alone.
func parsePy(expr string) pyExpr {
	if m := pyNetRE.FindStringSubmatch(expr); m != nil {
		return pyExpr{kind: pyNet, target: m[1], call: m[2] != "", args: m[3]}
	}
	if m := pyWaitRE.FindStringSubmatch(expr); m != nil {
		return pyExpr{kind: pyWait, call: true, args: m[1]}
	}
	if m := pyCallRE.FindStringSubmatch(expr); m != nil {
		return pyExpr{kind: pyNodeCall, target: m[1], method: m[2], call: m[3] != "", args: m[4]}
	}
	return pyExpr{kind: pyOther, target: expr}
}

// evalPy evaluates one expression. A node's cmd streams its output to w
// as it comes (so `py h1.cmd('yes | head -c 1G')` does not collect a
// gigabyte) and reports streamed; every other form returns its value.
func (s *shell) evalPy(ctx context.Context, expr string, w io.Writer) (value string, streamed bool, err error) {
	switch e := parsePy(expr); e.kind {
	case pyNet:
		value, err = s.evalNet(ctx, e.target, e.args)
		return value, false, err
	case pyWait:
		return "", false, s.waitListening(ctx, e.args)
	case pyNodeCall:
		if e.method == "cmd" {
			return "", true, s.nodeCmd(ctx, e.target, e.args, w)
		}
		value, err = s.evalNode(ctx, e.target, e.method, e.call, e.args)
		return value, false, err
	}
	value, err = s.evalName(expr)
	return value, false, err
}

// nodeCmd is node.cmd(...): Mininet joins its arguments with spaces.
func (s *shell) nodeCmd(ctx context.Context, name, rawArgs string, w io.Writer) error {
	node, err := s.net.Node(name)
	if err != nil {
		return fmt.Errorf("name '%s' is not defined", name)
	}
	pos, _ := pyArgs(rawArgs)
	s.prepareNode(ctx, name, node)
	_, err = node.CmdStream(ctx, strings.Join(pos, " "), w)
	return err
}

// evalName evaluates a bare name: a node or net.
func (s *shell) evalName(expr string) (string, error) {
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
	case "delHost", "delSwitch", "delNode":
		if len(pos) != 1 {
			return "", fmt.Errorf("net.%s needs one node", attr)
		}
		return "", s.net.DeleteNode(ctx, pos[0])
	case "delLinkBetween":
		if len(pos) != 2 {
			return "", fmt.Errorf("net.delLinkBetween needs two nodes")
		}
		return "", s.net.DeleteLink(ctx, pos[0], pos[1], "")
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
	w, err := parseWaitListening(rawArgs)
	if err != nil {
		return err
	}
	client, server, port, timeout := w.client, w.server, w.port, w.timeout
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
			_ = conn.Close() // only a probe that the server listens
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

// maxWaitTimeout bounds waitListening's timeout: a day is more than any
// script waits, and larger floats overflow a time.Duration.
const maxWaitTimeout = 24 * time.Hour

// waitArgs are waitListening's arguments.
type waitArgs struct {
	client, server string
	port           int
	timeout        time.Duration // 0: none
}

// parseWaitListening reads Mininet's waitListening(client,
// server='127.0.0.1', port=80, timeout=None) arguments and checks them.
func parseWaitListening(rawArgs string) (waitArgs, error) {
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
	w := waitArgs{client: get(0, "client", ""), server: get(1, "server", "127.0.0.1")}
	if w.client == "" {
		return w, fmt.Errorf("waitListening: no client node")
	}
	p := get(2, "port", "80")
	port, err := strconv.Atoi(p)
	if err != nil || port < 1 || port > 65535 {
		return w, fmt.Errorf("waitListening: bad port %q (1-65535)", p)
	}
	w.port = port
	if t := get(3, "timeout", "None"); t != "None" {
		secs, err := strconv.ParseFloat(t, 64)
		if err != nil || math.IsNaN(secs) || secs < 0 || secs > maxWaitTimeout.Seconds() {
			return w, fmt.Errorf("waitListening: bad timeout %q (seconds, 0 to %v)", t, maxWaitTimeout.Seconds())
		}
		w.timeout = time.Duration(secs * float64(time.Second))
	}
	return w, nil
}
