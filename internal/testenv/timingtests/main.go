// Command timingtests lists every test of the module that judges a
// measured time, rate, count over time or ratio of them, from the source:
// a test judges time when it, or a function of its package it calls,
// calls testenv.Judge or one of its forms (JudgeTime, Elapsed, Floor:
// the one helper for such judgements). It also finds tests that look as if they
// judged time without the helper (they read the clock with time.Since or
// compare rates in Mbit/s, or watch for machine stalls) and that neither
// use it nor are listed in internal/testenv/timing-audit.txt: those are
// errors. That file lists, with a reason, each test that looks so but
// judges no time ("exempt"), and each that judges time without the helper
// yet ("pending": it is a timing test all the same, in every list here).
//
//	go run ./internal/testenv/timingtests            # rows: package test [flags]
//	go run ./internal/testenv/timingtests -table     # the audit table (Markdown)
//	go run ./internal/testenv/timingtests -check     # exit 1 on a suspect (-v: list the pending)
//	go run ./internal/testenv/timingtests -regexp    # ^(TestA|TestB)$ for go test -run/-skip
//	go run ./internal/testenv/timingtests -packages  # packages holding a test of those names
//
// scripts/flake-check.sh and scripts/test.sh read their rows from here,
// so a test that starts judging time joins both without an edit.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// helpers are testenv's judging functions.
var helpers = map[string]bool{"Judge": true, "JudgeTime": true, "Elapsed": true, "Floor": true}

// judgement is one call of a helper: the source of its arguments.
type judgement struct {
	Quantity, Tolerance, Resolution string
}

// Test is one test function and what it judges.
type Test struct {
	Pkg, Name string
	Flags     []string // extra flags for go test: -tags=dpdk, norace
	Uses      []judgement
	Suspect   string // why it looks as if it judged time without the helper
}

type fn struct {
	decl  *ast.FuncDecl
	file  *fileInfo
	calls []string // names of package functions and methods it calls
	uses  []judgement
	smell string
}

type fileInfo struct {
	fset  *token.FileSet
	flags []string
}

func main() {
	table := flag.Bool("table", false, "print the audit table (Markdown)")
	check := flag.Bool("check", false, "exit 1 when a test looks as if it judged time without the helper")
	verbose := flag.Bool("v", false, "with -check: also list the pending tests")
	re := flag.Bool("regexp", false, "print one regexp matching every timing test's name")
	pkgs := flag.Bool("packages", false, "print the packages (./dir) that hold a test named like a timing test")
	root := flag.String("root", ".", "the module's root")
	flag.Parse()
	tests, names, err := scan(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "timingtests:", err)
		os.Exit(1)
	}
	audit, err := readAudit(filepath.Join(*root, "internal/testenv/timing-audit.txt"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "timingtests:", err)
		os.Exit(1)
	}
	var timing, pending, suspects []Test
	var stale []string
	known := map[string]bool{}
	for _, t := range tests {
		key := t.Pkg + " " + t.Name
		known[key] = true
		a := audit[key]
		switch {
		case len(t.Uses) > 0:
			timing = append(timing, t)
			if a.status != "" {
				stale = append(stale, key+": uses testenv.Judge, yet is listed as "+a.status)
			}
		case a.status == "pending":
			timing = append(timing, t)
			pending = append(pending, t)
		case t.Suspect != "" && a.status != "exempt":
			suspects = append(suspects, t)
		}
	}
	for key := range audit {
		if !known[key] {
			stale = append(stale, key+": no such test")
		}
	}
	sort.Strings(stale)
	switch {
	case *check:
		for _, t := range suspects {
			fmt.Printf("%s %s: %s, without testenv.Judge (use it, or list the test in internal/testenv/timing-audit.txt)\n", t.Pkg, t.Name, t.Suspect)
		}
		for _, s := range stale {
			fmt.Printf("internal/testenv/timing-audit.txt: %s\n", s)
		}
		for _, t := range pending {
			if !*verbose {
				break
			}
			fmt.Printf("pending: %s %s judges time without testenv.Judge yet (%s)\n", t.Pkg, t.Name, audit[t.Pkg+" "+t.Name].reason)
		}
		fmt.Printf("timingtests: %d tests judge time: %d through testenv.Judge, %d pending; %d unlisted suspects, %d stale audit lines\n",
			len(timing), len(timing)-len(pending), len(pending), len(suspects), len(stale))
		if len(suspects) > 0 || len(stale) > 0 {
			os.Exit(1)
		}
	case *table:
		fmt.Println("| Package | Test | Quantity | Tolerance | Resolution |")
		fmt.Println("|---|---|---|---|---|")
		for _, t := range timing {
			if len(t.Uses) == 0 {
				fmt.Printf("| %s | %s | pending: %s | | |\n", t.Pkg, t.Name, cell(audit[t.Pkg+" "+t.Name].reason))
			}
			for _, u := range t.Uses {
				fmt.Printf("| %s | %s | %s | %s | %s |\n", t.Pkg, t.Name, cell(u.Quantity), cell(u.Tolerance), cell(u.Resolution))
			}
		}
	case *re:
		set := map[string]bool{}
		for _, t := range timing {
			set[t.Name] = true
		}
		fmt.Printf("^(%s)$\n", strings.Join(sortedKeys(set), "|"))
	case *pkgs:
		set := map[string]bool{}
		for _, t := range timing {
			if !hasFlag(t, "-tags=dpdk") {
				set[t.Name] = true
			}
		}
		holders := map[string]bool{}
		for _, n := range names {
			if set[n.Name] {
				holders[n.Pkg] = true
			}
		}
		for _, p := range sortedKeys(holders) {
			fmt.Println(p)
		}
	default:
		for _, t := range timing {
			fmt.Printf("%-22s %-34s %s\n", t.Pkg, t.Name, strings.Join(t.Flags, " "))
		}
	}
}

func hasFlag(t Test, f string) bool {
	for _, x := range t.Flags {
		if x == f {
			return true
		}
	}
	return false
}

func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type auditLine struct{ status, reason string }

// readAudit reads "package test exempt|pending reason" lines; a line
// without a reason is an error.
func readAudit(path string) (map[string]auditLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the audit list: %w", err)
	}
	defer func() { _ = f.Close() }()
	out := map[string]auditLine{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		fields := strings.Fields(l)
		if len(fields) < 4 || (fields[2] != "exempt" && fields[2] != "pending") {
			return nil, fmt.Errorf("%s:%d: want \"package test exempt|pending reason\", got %q", path, line, l)
		}
		key := fields[0] + " " + fields[1]
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("%s:%d: %s is listed twice", path, line, key)
		}
		out[key] = auditLine{fields[2], strings.Join(fields[3:], " ")}
	}
	return out, sc.Err()
}

// scan parses every _test.go file of the module (not testdata, not the
// kube module, whose tests judge no time) and returns the tests.
func scan(root string) (tests []Test, all []Test, err error) {
	byDir := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "kube" || name == "vendor" || strings.HasPrefix(name, ".") || name == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, "_test.go") {
			dir := filepath.Dir(path)
			byDir[dir] = append(byDir[dir], path)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		rel, _ := filepath.Rel(root, dir)
		pkg := "."
		if rel != "." {
			pkg = "./" + filepath.ToSlash(rel)
		}
		if pkg == "./internal/testenv" {
			continue // the helper's own tests
		}
		ts, err := scanPackage(pkg, byDir[dir])
		if err != nil {
			return nil, nil, err
		}
		for _, t := range ts {
			all = append(all, t)
			tests = append(tests, t)
		}
	}
	return tests, all, nil
}

func scanPackage(pkg string, files []string) ([]Test, error) {
	sort.Strings(files)
	fset := token.NewFileSet()
	funcs := map[string][]*fn{}
	var testFns []*fn
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		info := &fileInfo{fset: fset, flags: buildFlags(f)}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			x := &fn{decl: fd, file: info}
			inspect(x)
			funcs[fd.Name.Name] = append(funcs[fd.Name.Name], x)
			if fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") && fd.Name.Name != "TestMain" {
				testFns = append(testFns, x)
			}
		}
	}
	var out []Test
	for _, x := range testFns {
		t := Test{Pkg: pkg, Name: x.decl.Name.Name, Flags: x.file.flags}
		seen := map[*fn]bool{}
		var walk func(*fn)
		walk = func(f *fn) {
			if seen[f] {
				return
			}
			seen[f] = true
			t.Uses = append(t.Uses, f.uses...)
			if t.Suspect == "" && f.smell != "" {
				t.Suspect = f.smell
			}
			for _, c := range f.calls {
				for _, g := range funcs[c] {
					walk(g)
				}
			}
		}
		walk(x)
		out = append(out, t)
	}
	return out, nil
}

// buildFlags turns a file's build constraint into go test flags.
func buildFlags(f *ast.File) []string {
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if !strings.HasPrefix(c.Text, "//go:build ") {
				continue
			}
			expr := strings.TrimPrefix(c.Text, "//go:build ")
			var flags []string
			if strings.Contains(expr, "dpdk") && !strings.Contains(expr, "!dpdk") {
				flags = append(flags, "-tags=dpdk", "norace")
			} else if strings.Contains(expr, "!race") {
				flags = append(flags, "norace")
			}
			return flags
		}
	}
	return nil
}

// inspect records what x calls, its helper calls, and whether it reads
// the clock to judge (time.Since) or handles Mbit/s without the helper.
func inspect(x *fn) {
	ast.Inspect(x.decl.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			switch f := n.Fun.(type) {
			case *ast.Ident:
				x.calls = append(x.calls, f.Name)
			case *ast.SelectorExpr:
				if id, ok := f.X.(*ast.Ident); ok && id.Name == "testenv" && helpers[f.Sel.Name] {
					x.uses = append(x.uses, judgementOf(x.file.fset, f.Sel.Name, n))
					return true
				}
				if id, ok := f.X.(*ast.Ident); ok && id.Name == "time" && f.Sel.Name == "Since" && x.smell == "" {
					x.smell = "reads the clock with time.Since at " + position(x.file.fset, n.Pos())
				}
				if id, ok := f.X.(*ast.Ident); ok && id.Name == "stallwatch" && x.smell == "" {
					x.smell = "watches for machine stalls (stallwatch) at " + position(x.file.fset, n.Pos())
				}
				x.calls = append(x.calls, f.Sel.Name)
			}
		case *ast.BasicLit:
			if n.Kind == token.STRING && strings.Contains(n.Value, "Mbit/s") && x.smell == "" {
				x.smell = "reports Mbit/s at " + position(x.file.fset, n.Pos())
			}
		}
		return true
	})
}

func position(fset *token.FileSet, p token.Pos) string {
	pos := fset.Position(p)
	return fmt.Sprintf("%s:%d", filepath.Base(pos.Filename), pos.Line)
}

func judgementOf(fset *token.FileSet, helper string, call *ast.CallExpr) judgement {
	src := func(e ast.Expr) string {
		var b strings.Builder
		_ = printer.Fprint(&b, fset, e)
		return b.String()
	}
	j := judgement{}
	switch helper {
	case "Floor": // Floor(t, quantity, got, floor, slack)
		if len(call.Args) == 5 {
			j.Quantity, j.Tolerance, j.Resolution = src(call.Args[1])+" (ms)", "at least "+src(call.Args[3])+" less "+src(call.Args[4]), "testenv.TimerSlack"
		}
	case "Elapsed": // Elapsed(t, quantity, got, limit)
		if len(call.Args) == 4 {
			j.Quantity, j.Tolerance, j.Resolution = src(call.Args[1])+" (ms)", "at most "+src(call.Args[3]), "testenv.CallerRead()"
		}
	default: // Judge(t, Measurement{...}) / JudgeTime(t, Timing{...})
		if len(call.Args) == 2 {
			if lit, ok := call.Args[1].(*ast.CompositeLit); ok {
				bound := ""
				for _, el := range lit.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					key, _ := kv.Key.(*ast.Ident)
					if key == nil {
						continue
					}
					switch key.Name {
					case "Quantity":
						j.Quantity = src(kv.Value)
					case "Tolerance":
						j.Tolerance = src(kv.Value)
					case "Resolution":
						j.Resolution = src(kv.Value)
					case "Bound":
						bound = strings.TrimPrefix(src(kv.Value), "testenv.")
					}
				}
				if bound != "" {
					j.Tolerance = bound + " " + j.Tolerance
				}
			}
		}
	}
	if j.Quantity == "" {
		j.Quantity = "(built at run time: see the test's log)"
	}
	return j
}
