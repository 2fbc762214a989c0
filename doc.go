// Package hymn builds and runs Mininet-style networks: give it a topology
// (from package topo), Build and Start it, run tests against it (PingAll,
// Iperf, ConfigLinkStatus, commands on nodes) and Stop it.
//
//	t, _ := topo.Linear(4, 1)
//	net, err := hymn.New(t, hymn.Options{})
//	...
//	if err := net.Start(ctx); err != nil { ... }
//	defer net.Stop()
//	loss, err := net.PingAll(ctx, 0)
//
// Everything the hymn command does is a call into this package. Nodes are
// network namespaces, links veth pairs; nodes and links are set up by a
// bounded worker pool and torn down in reverse. A failure halfway through a
// build removes what was built, and every namespace carries the network's
// run id so `hymn clean` can find the remains of a crashed run.
package hymn
