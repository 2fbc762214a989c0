// Package routing plans the layer-3 side of a resolved topology, as pure
// data: it finds the segments (the broadcast domains the links and
// switches make, up to the first host or router), gives the segments
// routers sit on subnets of their own (Address: a /24 per LAN, a /30 per
// link between two routers, and with IPv6 a /64 per segment), and
// computes static routes (Compute: shortest paths over the segments, by
// link delay where set and hop count otherwise, ties broken by name) for
// every host and router. Installing the routes in the nodes is the
// network's job (package hymn); docs/routing.md describes the plan.
package routing
