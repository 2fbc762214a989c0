// Package reliability holds hymn's reliability suite (tests only): bad
// inputs against the built binary, kill -9 at random points of building and
// running networks followed by hymn clean, build/teardown cycles through
// the Go API with flat resources, and parallel runs beside a looping
// hymn clean. run.sh drives it; HYMN_RELIABILITY=full runs the long
// version whose figures README.md records.
package reliability
