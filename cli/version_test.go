package cli

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
)

// A binary built from a checkout says which commit it was built from, so a
// bug report can name it; both `hymn version` and `hymn --version`.
func TestVersionNamesTheRevision(t *testing.T) {
	testenv.Tools(t, "git")
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	bin := buildHymn(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("hymn %s: %v", args[0], err)
		}
		m := regexp.MustCompile(`(?m)^revision: ([0-9a-f]{40})(\+modified)?$`).FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("hymn %s printed no revision:\n%s", args[0], out)
		}
		if m[1] != strings.TrimSpace(string(head)) {
			t.Errorf("hymn %s: revision %s, HEAD is %s", args[0], m[1], head)
		}
		for _, want := range []string{"hymn " + Version, "module: github.com/hymn-net/hymn", "committed: ", "go: go1."} {
			if !strings.Contains(string(out), want) {
				t.Errorf("hymn %s lacks %q:\n%s", args[0], want, out)
			}
		}
	}
}
