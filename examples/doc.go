// Package examples holds runnable hymn programs, each in its own directory
// and each built and run by the tests:
//
//   - line7: the CIMininet paper's seven hosts in a line, each routing to
//     the next (go run ./examples/line7 --test pingall);
//   - ci: a Go test that starts a small network, serves HTTP from one host
//     and fetches it from another, the way a CI pipeline tests a service;
//   - cimininet: the CIMininet paper's measurement of that line in its
//     namespace/VM x veth/SR-IOV variants (HDR diagrams, zero-loss rates);
//   - satellite, cellular, evening: links that change over time (a delay
//     schedule, a delivery trace with outages, a day of congestion ramps);
//   - sdnlearning, sdnremote: OpenFlow networks, one with ovs-testcontroller
//     as a learning switch, one with a small controller written in Go;
//   - internal/twin: the UDP echo prober and plotter the time-varying
//     examples share;
//   - *.yaml, *.py: topology files for hymn run and hymn --custom.
package examples
