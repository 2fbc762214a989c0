// Package topo is hymn's declarative network model: nodes, links, the ports
// that join them and their parameters, as plain data with no kernel calls.
//
// It holds Mininet's built-in topologies (minimal, single, reversed, linear,
// tree, torus) with Mininet's node names, port numbers and link order, the
// parser for mn spec strings ("tree,depth=2,fanout=3"), and the address plan
// that turns a Topo into a resolved Plan (interface names, IPs, MACs) ready to
// deploy. Everything is validated here, before the first netlink call, so a
// bad topology fails with a message that names the problem and nothing is
// built.
//
// Topologies also come from files: hymn's YAML/JSON format (LoadFile; every
// error names file:line:column and the field, unknown keys are errors;
// schema/topology.schema.json), MiniEdit .mn files (LoadMiniEdit), and
// Mininet custom Python topologies (LoadCustom), which run unchanged with
// python3 against hymn's embedded mininet package (the one "hymn python"
// runs), whose Topo records addHost/addSwitch/addLink. DOT renders a
// topology for Graphviz.
package topo
