// Package hymntest is for Go tests that build hymn networks, in this module
// and outside it:
//
//	func TestReachable(t *testing.T) {
//		net := hymntest.Start(t, hymntest.Topo(t, "linear,2"), hymn.Options{})
//		hymntest.Reachable(t, net, "h1", "h2")
//	}
//
// Start skips the test without root (or fails it under HYMN_REQUIRE=all,
// as CI sets), registers the network's teardown before starting it, and at
// cleanup checks that nothing of the run is left: no namespace, no state
// file, no Open vSwitch state, no process. The other helpers wait for a
// condition, assert reachability, run a node command with a timeout (failing
// the test with what went wrong) and watch for stalls of the machine, which
// a test that judges a time must tell from a slow program.
package hymntest
