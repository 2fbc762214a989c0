// Package examples holds runnable hymn programs, each in its own directory
// and each built and run by the tests:
//
//   - line7: the CIMininet paper's seven hosts in a line, each routing to
//     the next (go run ./examples/line7 --test pingall);
//   - ci: a Go test that starts a small network, serves HTTP from one host
//     and fetches it from another, the way a CI pipeline tests a service;
//   - *.yaml: topology files for hymn run.
package examples
