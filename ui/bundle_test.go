package ui

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestBundleCurrent rebuilds the page from web/ with the npm packages the
// lock file pins and checks the committed assets are what it makes: a
// change to web/src without `go generate ./ui` fails here.
func TestBundleCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs npm ci")
	}
	// npm is optional (the bundle is committed): without it, skip even
	// under HYMN_REQUIRE.
	for _, tool := range []string{"npm", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: the committed bundle is not rebuilt", tool)
		}
	}
	tmp := t.TempDir()
	web := filepath.Join(tmp, "web")
	// Not node_modules: what the checkout has installed could differ from
	// the lock.
	if err := os.CopyFS(filepath.Join(web, "src"), os.DirFS("web/src")); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("web", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(web, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// npm ci needs the registry: a machine without it cannot check.
	ci := exec.Command("npm", "ci", "--no-audit", "--no-fund")
	ci.Dir = web
	if b, err := ci.CombinedOutput(); err != nil {
		t.Skipf("npm ci (the registry unreachable?): %v\n%s", err, b)
	}
	out := filepath.Join(tmp, "assets")
	cmd := exec.Command("go", "run", "./internal/bundle", "-web", web, "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("bundling: %v\n%s", err, b)
	}
	for _, name := range []string{"app.js", "app.css"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("assets", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("assets/%s is not what web/ builds (%d bytes built, %d committed): run go generate ./ui", name, len(got), len(want))
		}
	}
}
