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
		t.Skip("fetches the npm packages from the registry")
	}
	tmp := t.TempDir()
	web := filepath.Join(tmp, "web")
	// Not node_modules: what the checkout has installed could differ from
	// the lock. The bundler fetches the lock's packages from the npm
	// registry itself and checks their integrity (no Node.js needed).
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
