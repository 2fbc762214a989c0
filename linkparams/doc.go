// Package linkparams owns the parameters of a link: the one grammar behind
// topology files, mn's --link specs, the Go API and live changes.
//
// A topology stores link parameters as strings (topo.Params, what files
// and mn specs give): Mininet's TCLink keys (delay, jitter, bw in Mbit/s,
// loss in percent, max_queue_size) and hymn's emulator keys (Keys), each
// optionally prefixed by a direction ("a>b.delay", emulator.Direction's
// spelling). Configs turns them into the emulator configurations of the two
// directions, setting Mininet's keys on emulator.Config directly; values of
// the emulator's own keys (emu, police, space, ge, ...) are read by the
// emulator's parser, since they are written in its grammar. TCIntfInfo
// prints what Mininet's TCIntf prints for a link, ParseLinkSpec reads mn's
// --link, Change applies a live change. One key is not about emulation:
// emulator=afpacket|dpdk (PortsKey, Ports) picks the ports an emulated VF
// link's forwarder uses; it alone asks for no emulator.
//
// Go users set parameters typed: durations, rates in bit/s, loss as a
// probability, per direction when wanted. Params writes them in the same
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
