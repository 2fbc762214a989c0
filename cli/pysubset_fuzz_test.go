package cli

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParsePx(t *testing.T) {
	for line, want := range map[string][]pxStmt{
		"print h1.IP()":  {{"h1.IP()", true}},
		"print(h1.IP())": {{"h1.IP()", true}},
		"from mininet.util import x; print h1.name": {{"h1.name", true}},
		"h1.cmd('a; b'); h2.cmd(\"c;d\")":           {{"h1.cmd('a; b')", false}, {"h2.cmd(\"c;d\")", false}},
		"printer.cmd('x')":                          {{"printer.cmd('x')", false}},
		" ; ;":                                      nil,
	} {
		if got := parsePx(line); !reflect.DeepEqual(got, want) {
			t.Errorf("parsePx(%q) = %+v, want %+v", line, got, want)
		}
	}
}

func TestPyArgs(t *testing.T) {
	pos, kw := pyArgs(`'echo a, b', "x\"y", timeout=3, 'k=v'`)
	if !reflect.DeepEqual(pos, []string{"echo a, b", `x"y`, "k=v"}) || kw["timeout"] != "3" || len(kw) != 1 {
		t.Errorf("pos %q kw %q", pos, kw)
	}
	if e := parsePy("h1.cmd('ls -l')"); e.kind != pyNodeCall || e.target != "h1" || e.method != "cmd" || !e.call || e.args != "'ls -l'" {
		t.Errorf("parsePy: %+v", e)
	}
	if e := parsePy("net.addLink(h1, h2)"); e.kind != pyNet || e.target != "addLink" || e.args != "h1, h2" {
		t.Errorf("parsePy: %+v", e)
	}
}

func TestParseWaitListening(t *testing.T) {
	w, err := parseWaitListening("h1, h2, 80, timeout=2.5")
	if err != nil || w.client != "h1" || w.server != "h2" || w.port != 80 || w.timeout != 2500*time.Millisecond {
		t.Errorf("%+v %v", w, err)
	}
	for _, bad := range []string{"h1, h2, 0", "h1, h2, 70000", "h1, h2, x", "h1, timeout=NaN", "h1, timeout=-1", "h1, timeout=1e300", "h1, timeout=inf", ""} {
		if _, err := parseWaitListening(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzPySubset: the py/px parsing (statement splitting, expression forms,
// argument lists, waitListening's arguments) never panics, and what it
// returns is consistent with its input.
func FuzzPySubset(f *testing.F) {
	for _, s := range []string{
		"print h1.IP()", "h1.cmd('echo a; b', x=1)", "net.addLink(h1, s1)", "net.hosts",
		"waitListening(h1, h2, 80, timeout=1)", `print(h1.cmd("a\"b\\"))`, "import os; print h1.MAC('h1-eth0')",
		"h1.intfList()", "'", "\\", "print", "print ()", "net.addHost('h3'", "waitListening(client=h1, port=65536)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, st := range parsePx(line) {
			if st.expr != strings.TrimSpace(st.expr) && !st.print {
				t.Fatalf("statement %q not trimmed", st.expr)
			}
			e := parsePy(st.expr)
			if e != parsePy(st.expr) {
				t.Fatal("parsePy not deterministic")
			}
			switch e.kind {
			case pyNodeCall:
				if !strings.HasPrefix(st.expr, e.target+"."+e.method) {
					t.Fatalf("%q parsed as %+v", st.expr, e)
				}
			case pyNet:
				if !strings.HasPrefix(st.expr, "net."+e.target) {
					t.Fatalf("%q parsed as %+v", st.expr, e)
				}
			}
			pos, kw := pyArgs(e.args)
			for k := range kw {
				if !isPyName(k) {
					t.Fatalf("keyword %q from %q", k, e.args)
				}
			}
			if len(pos)+len(kw) > len(e.args)+1 {
				t.Fatalf("%d arguments from %q", len(pos)+len(kw), e.args)
			}
			if w, err := parseWaitListening(e.args); err == nil {
				if w.port < 1 || w.port > 65535 || w.timeout < 0 || w.timeout > maxWaitTimeout || w.client == "" {
					t.Fatalf("accepted %+v from %q", w, e.args)
				}
			}
		}
		parts := splitOutsideQuotes(line, ';')
		if strings.Join(parts, ";") != line {
			t.Fatalf("split %q into %q", line, parts)
		}
		_ = unquote(line)
	})
}

// FuzzShellLine: the mininet> line handling that needs no network
// (comment stripping, command/argument split, prefix counting, node-name
// substitution, line reading) never panics and keeps its invariants.
func FuzzShellLine(f *testing.F) {
	for _, s := range []string{
		"h1 ping -c1 h2", "time time noecho h1 echo x", "  nodes  ", "h1 echo h2 # comment", "source /x",
		"time", "noecho   ", "py h1.IP()", "\x00", "h1\th2", "\u00a0h1 x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		line = stripComment(line)
		if strings.Contains(line, "#") {
			t.Fatalf("comment left in %q", line)
		}
		name, args, ok := splitCommand(line)
		if ok && (name == "" || strings.Contains(name, " ") || args != strings.TrimSpace(args)) {
			t.Fatalf("%q split into %q %q", line, name, args)
		}
		if !ok && strings.TrimSpace(line) != "" {
			t.Fatalf("%q called blank", line)
		}
		if n := prefixChain(line); n > len(line)/4 {
			t.Fatalf("%d prefixes in %q", n, line)
		}
		sub := substituteNodes(args, func(tok string) (string, bool) {
			if tok == "h1" || tok == "h2" {
				return "10.0.0.1", true
			}
			return "", false
		})
		if strings.Count(sub, " ") != strings.Count(args, " ") {
			t.Fatalf("substitution changed the spacing: %q -> %q", args, sub)
		}
		s, out := bareShell()
		// Only lines that need no network are run: help and prefixes of it.
		if strings.HasPrefix(strings.TrimLeft(line, " "), "help") || prefixChain(line) > 0 && strings.Contains(line, "help") {
			rest := line
			for prefixChain(rest) > 0 {
				_, rest, _ = splitCommand(rest)
			}
			if n, _, _ := splitCommand(rest); n == "help" {
				s.onecmd(t.Context(), line)
				if out.Len() == 0 {
					t.Fatalf("%q printed nothing", line)
				}
			}
		}
	})
}
