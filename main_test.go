package hymn

import (
	"os"
	"testing"
)

// TestMain runs the package's tests, or, as a child process of one of them
// (HYMN_SDN_HELPER=1), only the part that test needs to kill.
func TestMain(m *testing.M) {
	if os.Getenv("HYMN_SDN_HELPER") == "1" {
		os.Exit(sdnHelperNetwork())
	}
	os.Exit(m.Run())
}
