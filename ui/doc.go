// Package ui is hymn's live view: an HTTP server, in the process that runs
// a network, with a JSON snapshot of the topology and its counters, a
// stream of updates (server-sent events), a few actions (a link up or
// down, new emulator parameters, captures, measure) and a page that draws
// it all, bundled from npm libraries at build time and embedded in the
// binary (assets/, made by `go generate ./ui`). docs/ui.md describes the
// API.
//
// Every request goes through the gate: it needs the server's random token
// (in the URL, a header or the page's own links) and, when it carries an
// Origin, the server's own origin; actions also need the token and are
// refused in read-only mode. The page never runs a command in a node: the
// only actions are the ones the mininet> shell's link, emu, capture and
// measure commands take, through the same hymn.Network calls, logged in
// the run's log.
//
// A process without the network (`hymn ui --run RUN`) reaches it through
// the run's control socket: every hymn run listens on an abstract Unix
// socket named after its run id (ServeControl), accepting only peers of
// its own user, and Proxy puts the same gate and page in front of it.
package ui
