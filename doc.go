// Package hymn builds and runs Mininet-style networks: give it a topology
// (package topo; link parameters typed with package linkparams), start it,
// run tests against it (PingAll, Iperf, ConfigLinkStatus, commands on
// nodes, live link changes with SetLink) and stop it.
//
//	t, _ := topo.Linear(4, 1)
//	net, err := hymn.New(t, hymn.Options{Log: mnlog.New(os.Stderr, mnlog.Info)})
//	...
//	if err := net.Start(ctx); err != nil { ... } // nothing is left on error
//	defer net.Stop()
//	loss, err := net.PingAll(ctx, 0)
//
// In Go tests, package hymntest does this in one call (hymntest.Start skips
// without root, registers Stop before building and checks at the end that
// nothing of the run is left).
//
// Everything the hymn command does is a call into this package. New
// validates the whole topology before anything is built. Start is all or
// nothing: a failure or an ended context at any phase removes what was
// built. Nodes are network namespaces or VMs (Options.Nodes), links veth
// pairs or SR-IOV VF pairs (Options.Links), any link optionally split by
// hymn's emulator; each link kind is one implementation of a small
// interface (link.go). Every namespace carries the network's run id, so
// Clean (and `hymn clean`) can find the remains of a crashed run.
package hymn
