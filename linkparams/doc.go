// Package linkparams holds the parameters of a link in a topology, typed:
// delays and jitter as time.Duration, rates in bit/s, loss as a
// probability, per direction when wanted. A topology stores link
// parameters as strings (topo.Params, what files and mn specs give), in
// Mininet's TCLink keys (delay, jitter, bw in Mbit/s, loss in percent,
// max_queue_size) and hymn's emulator keys, each optionally prefixed by a
// direction ("a>b.delay"). Params writes typed values in exactly that
// grammar, so a link built from Go and one read from a file are the same
// link and are validated by the same code when the topology is resolved.
//
//	t.AddLink("h1", "s1", linkparams.Params(
//		linkparams.Delay(10*time.Millisecond),
//		linkparams.Jitter(time.Millisecond),
//		linkparams.Rate(100e6),
//		linkparams.For(emulator.AtoB, linkparams.Loss(0.01)),
//	))
package linkparams
