package hymn

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hymn-net/hymn/emulator/dpdk"
)

// TestMain runs the package's tests, or, as a child process of one of them
// (HYMN_SDN_HELPER=1), only the part that test needs to kill.
func TestMain(m *testing.M) {
	if os.Getenv("HYMN_SDN_HELPER") == "1" {
		os.Exit(sdnHelperNetwork())
	}
	code := m.Run()
	// DPDK's environment, if a test started it (dpdk tag), lives as long
	// as the process; it ends here and must leave nothing behind.
	if err := CleanupDPDK(); err != nil {
		fmt.Fprintln(os.Stderr, "DPDK cleanup:", err)
		code = 1
	}
	if _, err := os.Stat(filepath.Join(dpdk.RunDir, dpdk.FilePrefix())); err == nil {
		fmt.Fprintln(os.Stderr, "DPDK runtime directory left behind")
		code = 1
	}
	os.Exit(code)
}
