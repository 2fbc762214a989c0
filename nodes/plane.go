package nodes

// switchPlane is how a switch node forwards: one implementation per switch
// kind, each in its own file with its constructor. NsNode holds one
// (nil for hosts and routers) and asks it, never which kind it is.
type switchPlane interface {
	// attach makes intf, an interface in the switch's namespace, a port
	// and brings it up.
	attach(n *NsNode, intf string) error
	// detach takes intf out of the switch; its device may be gone.
	detach(n *NsNode, intf string) error
	// ovsEnv is what Open vSwitch's programs need in their environment to
	// reach the plane's database and daemons; nil for a plane without.
	ovsEnv() []string
	// close releases what the plane holds in the process (Close).
	close() error
	// release stops what the plane runs, before its namespace goes
	// (Delete).
	release()
	// sharesNamespace says the namespace belongs to the plane, not to
	// the node, which must not delete it.
	sharesNamespace() bool
}

// switchKinds is the registry of switch kinds: the first whose test
// accepts the node's Config makes its plane; the last accepts any.
var switchKinds = []struct {
	is   func(Config) bool
	make func(*NsNode, Config) (switchPlane, error)
}{
	{func(c Config) bool { return c.BPF }, newBPFPlane},      // bpf.go
	{func(c Config) bool { return c.OVS }, newOVSSwitch},     // ovs.go
	{func(Config) bool { return true }, newLinuxBridgePlane}, // bridge.go
}

// newSwitchPlane makes the plane of a switch node from its Config.
func newSwitchPlane(n *NsNode, cfg Config) (switchPlane, error) {
	for _, k := range switchKinds {
		if k.is(cfg) {
			return k.make(n, cfg)
		}
	}
	panic("unreachable: the last switch kind accepts every Config")
}
