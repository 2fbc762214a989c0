package cli

import (
	"os/exec"
	"regexp"
	"runtime/debug"
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

// A binary without VCS stamping says so, and how to get a stamped one,
// rather than printing only its version (issue 22).
func TestVersionWithoutVCSStamping(t *testing.T) {
	for _, c := range []struct {
		name string
		info *debug.BuildInfo
		ok   bool
	}{
		{"no vcs settings", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/hymn-net/hymn", Version: "(devel)"}}, true},
		{"no build info", nil, false},
	} {
		out := versionFrom(c.info, c.ok)
		for _, want := range []string{"hymn " + Version + "\n", "revision: unknown (built without VCS stamping; use scripts/setup.sh or go build -buildvcs=true)\n", "go: go1."} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: %q lacks %q", c.name, out, want)
			}
		}
	}
}
