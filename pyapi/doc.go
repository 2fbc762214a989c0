// Package pyapi serves hymn's network to Mininet's Python API.
//
// hymn's mininet Python package (python/mininet, run by "hymn python")
// keeps no network of its own: its Mininet, Node and Link objects are
// proxies for a hymn.Network that lives in a "hymn pyserve" process the
// package starts. The two speak a small JSON-lines protocol over a Unix
// socket in a 0700 directory, so only the script's user can reach it. The
// server sends a hello line with ProtocolVersion first; every request is
// one line {"id":N,"op":"...","args":{...}} and gets one line back
// {"id":N,"ok":true,"result":...} or {"id":N,"ok":false,"error":"...",
// "kind":"..."}. Requests run concurrently (an iperf does not block a
// ping), so answers may come out of order; the id pairs them.
//
// The server owns the network's lifetime: when the connection ends (the
// script exited, raised, or was killed with -9) or its parent process
// dies, everything it built is removed, unless it was started with Keep
// (then hymn clean removes it). The protocol is the same one a client in
// another language could use; docs/python.md describes it.
package pyapi
