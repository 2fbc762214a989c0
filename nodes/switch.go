package nodes

// AttachPort makes an interface of the switch a port and brings it up.
// On a node that is no switch it does nothing.
func (n *NsNode) AttachPort(intf string) error {
	if n.plane == nil {
		return nil
	}
	return n.plane.attach(n, intf)
}

// SetsPortsUp reports whether AttachPort sets the port up: it does for
// every switch with a forwarding plane (every plane's attach ends so).
func (n *NsNode) SetsPortsUp() bool { return n.plane != nil }

// SharesNamespace reports whether the node lives in a namespace that is
// not its own (an OpenFlow switch of the shared Open vSwitch, a BPF switch
// in the network's switch namespace): deleting the node leaves the
// namespace, and the namespace holds other nodes' interfaces too.
func (n *NsNode) SharesNamespace() bool { return n.plane != nil && n.plane.sharesNamespace() }

// DetachPort takes an interface out of the switch: a BPF switch floods to
// it no more and forgets what it learned on it; an OVS bridge loses the
// port from its database (OVS would keep a port whose device is gone). A
// Linux bridge's port leaves with its device, so for a bridge it does
// nothing.
func (n *NsNode) DetachPort(intf string) error {
	if n.plane == nil {
		return nil
	}
	return n.plane.detach(n, intf)
}

// OVSEnv is what ovs-vsctl, ovs-ofctl and ovs-appctl need in their
// environment to reach the Open vSwitch of a switch node (its private
// database, bridge and daemon sockets), so that they work in the switch's
// shell as Mininet's do in the root namespace with the system's Open
// vSwitch; nil for other nodes.
func (n *NsNode) OVSEnv() []string {
	if n.plane == nil {
		return nil
	}
	return n.plane.ovsEnv()
}
