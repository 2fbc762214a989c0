package tools

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// Every package named here must be one scripts/setup.sh installs, or the
// error message would send a user to a package CI never tests with.
func TestPackagesAreInstalledBySetup(t *testing.T) {
	data, err := os.ReadFile("../../scripts/setup.sh")
	if err != nil {
		t.Fatal(err)
	}
	installed := map[string]bool{}
	inList := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "packages=("):
			inList = true
			continue
		case inList && strings.HasPrefix(line, ")"):
			inList = false
		}
		if inList {
			code, _, _ := strings.Cut(line, "#")
			for _, p := range strings.Fields(code) {
				installed[p] = true
			}
		}
	}
	if len(installed) < 10 {
		t.Fatalf("found only %d packages in setup.sh's list: %v", len(installed), installed)
	}
	for prog, pkg := range Packages {
		if !installed[pkg] {
			t.Errorf("%s is mapped to package %s, which scripts/setup.sh does not install", prog, pkg)
		}
	}
}

func TestMissingNamesThePackage(t *testing.T) {
	if err := Missing("iptables"); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "apt-get install iptables") {
		t.Errorf("Missing(iptables) = %v", err)
	}
	if err := Missing("frobnicate"); strings.Contains(err.Error(), "apt-get install") {
		t.Errorf("an unknown program must not suggest a blank package: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if err := Check("ip"); err == nil || !strings.Contains(err.Error(), "iproute2") {
		t.Errorf("Check(ip) with an empty PATH = %v", err)
	}
}
