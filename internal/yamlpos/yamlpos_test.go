package yamlpos

import (
	"errors"
	"strings"
	"testing"
)

func TestPositionsAndMerges(t *testing.T) {
	for _, c := range []struct {
		name, src, want string
	}{
		{"unknown key", "a: 1\nzz: 2\n", "f.yaml:2:1: zz: unknown key \"zz\" (allowed here: a, b)"},
		{"duplicate key", "a: 1\na: 2\n", "key \"a\" is given twice (first at line 1)"},
		{"not an integer", "a: x\n", "f.yaml:1:4: a: must be an integer, got a string"},
		{"JSON the YAML parser refuses", "{\"a\": 1,\n \"b\": \"\\/\", \"c\": 3}", "f.yaml:2:13: c: unknown key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &Doc{File: "f.yaml"}
			root, err := d.Parse([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			ps, _ := d.Mapping(root, "")
			d.CheckKeys(ps, "", []string{"a", "b"})
			for _, p := range ps {
				if p.Key == "a" {
					d.Integer(p.Val, JoinField("", p.Key))
				}
			}
			err = errors.Join(d.Errs...)
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrBadFile) {
				t.Fatalf("errors %v, want %q", err, c.want)
			}
		})
	}
	t.Run("merge key", func(t *testing.T) {
		d := &Doc{File: "f.yaml"}
		root, err := d.Parse([]byte("base: &b {a: 1, b: 2}\nuse: {<<: *b, b: 3}\n"))
		if err != nil {
			t.Fatal(err)
		}
		top, _ := d.Mapping(root, "")
		use, _ := d.Mapping(top[1].Val, "use")
		got := map[string]string{}
		for _, p := range use {
			got[p.Key], _ = d.Value(p.Val, p.Key)
		}
		if got["a"] != "1" || got["b"] != "3" || len(d.Errs) > 0 {
			t.Fatalf("merged %v, errors %v", got, d.Errs)
		}
	})
}
