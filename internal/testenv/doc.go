// Package testenv decides whether a test that needs something from the
// machine (root, a tool, Mininet, a VM under TCG) runs, skips, or fails.
//
// On a developer's machine a missing prerequisite is a skip that says what
// is missing and which Debian package provides it. Under HYMN_REQUIRE=all
// (set by .ci/run, whose setup script installs everything) the same
// situation is a failure: CI cannot pass by silently testing less. Only
// what this kind of machine can never have (KVM, SR-IOV hardware, vfio) is
// reported with Hardware, which always skips; the README lists each.
//
// Every test in the module asks here; none checks os.Geteuid or
// exec.LookPath by itself.
package testenv
