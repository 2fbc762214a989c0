package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/internal/tools"
)

// RequireEnv is the environment variable that turns skips into failures:
// HYMN_REQUIRE=all makes every satisfiable prerequisite mandatory.
const RequireEnv = "HYMN_REQUIRE"

// Required reports whether missing prerequisites must fail the test.
func Required() bool {
	v := strings.TrimSpace(os.Getenv(RequireEnv))
	return v == "all" || v == "1" || v == "true"
}

// Skip skips the test for a reason the setup script can fix, or fails it
// under HYMN_REQUIRE=all.
func Skip(t testing.TB, reason string) {
	t.Helper()
	if Required() {
		t.Fatalf("prerequisite missing (%s=all forbids skipping): %s", RequireEnv, reason)
	}
	t.Skip(reason)
}

// Root skips (or fails under HYMN_REQUIRE) unless the test runs as root.
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, "needs root (network namespaces, veth, packet sockets)")
	}
}

// Tools skips (or fails under HYMN_REQUIRE) unless every named program is on
// PATH; the reason names the Debian package that provides each one missing.
func Tools(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			Skip(t, tools.Missing(name).Error())
		}
	}
}

// RootAndTools is Root followed by Tools.
func RootAndTools(t testing.TB, names ...string) {
	t.Helper()
	Root(t)
	Tools(t, names...)
}

// Hardware always skips: the reason is something this kind of machine
// cannot have (KVM, SR-IOV hardware, vfio), so no setup script can fix it.
func Hardware(t testing.TB, reason string) {
	t.Helper()
	t.Skip("hardware this machine does not have: " + reason)
}
