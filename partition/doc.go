// Package partition splits a resolved topology (a topo.Plan) into parts,
// one per worker machine, for running one topology across several
// machines: every link whose ends land on different workers (a cut link)
// becomes a tunnel between them, so the split minimises the number of cut
// links while keeping the parts balanced.
//
// Balance is a hard constraint: with n nodes over k workers every part
// holds floor(n/k) or ceil(n/k) nodes (Options.Slack widens that band).
// Within it the cut is minimised by growing each part from a peripheral
// node along the graph (greedy graph growing, so chains and trees are cut
// into connected pieces), then improving the cut with single moves and
// pairwise swaps (Kernighan–Lin style) that keep the balance. VM nodes'
// memory is then evened out by swaps of equal node count. Everything is
// deterministic: the same plan and options always give the same parts, so
// a coordinator and its workers can each compute it and agree.
//
// Placement hints override the split: a node's placement parameter pins it
// to a worker (placement: 1 in a topology file), and nodes sharing a
// placementGroup parameter (the file's top-level placement: list) are kept
// on one worker. Hints that cannot be honoured within the balance band
// (too many nodes pinned to one worker, a group larger than a part) are
// errors that say which nodes and by how much, never a silent imbalance.
//
// The package is pure: it never touches the kernel.
package partition
