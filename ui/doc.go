// Package ui is hymn's live view: an HTTP server, in the process that runs
// a network, with a JSON snapshot of the topology and its counters, a
// stream of updates (server-sent events), a few actions (a link up or
// down, new emulator parameters, captures, measure) and a page that draws
// it all, bundled from npm libraries at build time and embedded in the
// binary (assets/, made by `go generate ./ui`). docs/ui.md describes the
// API.
//
// Every request goes through the gate: it answers only its own Host
// names, needs the server's random token (the page's URL trades it for
// an HttpOnly cookie and drops it; scripts send a header) and, when it
// carries an Origin, the server's own origin; actions are refused in
// read-only mode. Timeouts and limits (event streams, captures) keep a
// client from holding the server. The page never runs a command in a node
// nor names a file: the only actions are the ones the mininet> shell's
// link, emu, capture and measure commands take, through the same
// hymn.Network calls, logged in the run's log.
//
// A process without the network (`hymn ui --run RUN`) reaches it through
// the run's control socket: every hymn run listens on an abstract Unix
// socket named after its run id (ServeControl), accepting only root of its
// own user namespace, and Proxy, having checked that the socket's listener
// is the run's own process, puts the same gate and page in front of it.
package ui
