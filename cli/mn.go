package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
	"github.com/spf13/cobra"
)

// switchChoice is what --switch (and --innamespace) asked for.
type switchChoice struct {
	kind      hymn.SwitchKind
	stp       bool
	failMode  string
	protocols string
	openFlow  bool // an OpenFlow switch: it needs controllers
}

// parseSwitchSpec reads --switch: auto (hymn's default: bpf where it
// serves, else lxbr; hymn.SwitchAuto), lxbr, ovsbr and bpf (a BPF
// MAC-learning switch, no STP) as before; ovsk, ovs,
// default (Mininet's OVSSwitch) and user (UserSwitch) are Open vSwitch
// OpenFlow switches in userspace mode, and so are in-namespace switches
// (--innamespace), with a one-line notice for what is mapped.
func parseSwitchSpec(spec string, inNamespace bool, lg *mnlog.Logger) (switchChoice, error) {
	var c switchChoice
	s, err := topo.ParseSpec(spec)
	if err != nil {
		return c, fmt.Errorf("%w: --switch: %v", ErrUsage, err)
	}
	if s.Name == "ivs" {
		return c, fmt.Errorf("%w: --switch ivs: Indigo Virtual Switch is not available; use ovsk (Open vSwitch, OpenFlow), ovsbr or lxbr", ErrUsage)
	}
	if c.kind, err = hymn.ParseSwitchKind(s.Name); err != nil || s.Name == "" {
		return c, fmt.Errorf("%w: --switch %s: unknown switch; use auto, lxbr, ovsbr, bpf, ovsk, ovs, user or default", ErrUsage, s.Name)
	}
	options := "stp"
	if c.openFlow = c.kind == hymn.SwitchOVS; c.openFlow {
		options = "stp, failMode, protocols, datapath, dpid"
	}
	if s.Name == "user" {
		lg.Warningf("*** --switch user: Mininet's UserSwitch runs here as Open vSwitch in userspace mode\n")
	}
	if inNamespace {
		if !c.openFlow {
			return c, fmt.Errorf("%w: --innamespace needs an OpenFlow switch (ovsk, ovs, user or default), not %s", ErrUsage, s.Name)
		}
		lg.Warningf("*** --innamespace: switches run in a namespace of their own (Open vSwitch in userspace mode); the controller stays on 127.0.0.1\n")
	}
	if c.kind == hymn.SwitchBPF {
		options = "no options"
	}
	if c.kind != hymn.SwitchLinuxBridge && c.kind != hymn.SwitchBPF && c.kind != hymn.SwitchAuto && c.kind != "" {
		if err := nodes.OVSAvailable(); err != nil {
			return c, fmt.Errorf("%w: --switch %s: %v", ErrUsage, s.Name, err)
		}
	}
	if len(s.Args) > 0 {
		return c, fmt.Errorf("%w: --switch %s: unexpected argument %q", ErrUsage, spec, s.Args[0])
	}
	for _, kv := range s.Kwargs {
		switch {
		case kv.Key == "stp":
			c.stp = kv.Value == "1" || strings.EqualFold(kv.Value, "true")
			if c.stp && c.kind == hymn.SwitchBPF {
				return c, fmt.Errorf("%w: --switch %s: STP needs --switch lxbr or ovsbr (a bpf switch has no spanning tree)", ErrUsage, spec)
			}
		case c.openFlow && kv.Key == "failMode":
			if kv.Value != "secure" && kv.Value != "standalone" {
				return c, fmt.Errorf("%w: --switch %s: failMode must be secure or standalone", ErrUsage, spec)
			}
			c.failMode = kv.Value
		case c.openFlow && kv.Key == "protocols":
			for _, p := range strings.Split(kv.Value, ",") {
				if p != "OpenFlow10" && p != "OpenFlow11" && p != "OpenFlow12" && p != "OpenFlow13" {
					return c, fmt.Errorf("%w: --switch %s: protocols must be OpenFlow10 to OpenFlow13", ErrUsage, spec)
				}
			}
			c.protocols = kv.Value
		case c.openFlow && kv.Key == "datapath":
			// Mininet's datapath=kernel|user: this machine's OVS always
			// runs in userspace.
			if kv.Value != "user" && kv.Value != "kernel" {
				return c, fmt.Errorf("%w: --switch %s: datapath must be user or kernel", ErrUsage, spec)
			}
		default:
			return c, fmt.Errorf("%w: --switch %s: unknown option %q (it takes %s)", ErrUsage, spec, kv.Key, options)
		}
	}
	return c, nil
}

// parseControllers reads the --controller flags. Without any, OpenFlow
// switches get Mininet's default controller, unless the topology brings
// its own; other switches get none. Names continue after the topology's
// controllers (c0, c1...).
func parseControllers(specs []string, sw switchChoice, t *topo.Topo) ([]topo.Controller, error) {
	taken := map[string]bool{}
	for _, c := range t.Controllers() {
		taken[c.Name] = true
	}
	if len(specs) == 0 {
		if !sw.openFlow || len(taken) > 0 {
			return nil, nil
		}
		specs = []string{"default"}
	}
	var out []topo.Controller
	next := 0
	for _, spec := range specs {
		for taken[fmt.Sprintf("c%d", next)] || t.Node(fmt.Sprintf("c%d", next)) != nil {
			next++
		}
		c, err := t.ParseControllerFor(fmt.Sprintf("c%d", next), spec) // a custom file may name its own
		next++
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		if c == nil {
			continue
		}
		if _, err := nodes.ResolveControllerKind(c.Kind); err != nil {
			return nil, fmt.Errorf("%w: --controller %s: %v", ErrUsage, spec, err)
		}
		out = append(out, *c)
	}
	return out, nil
}

// mnName is the program name that makes hymn behave as Mininet's mn.
const mnName = "mn"

// MNMode reports whether hymn runs under the name mn (a symlink): then it
// takes Mininet's defaults (--switch default --controller default) and
// prints Mininet's usage text.
func MNMode() bool { return filepath.Base(os.Args[0]) == mnName }

// setupMNMode makes the root command Mininet's mn: its defaults and usage.
func setupMNMode(root *cobra.Command, f *mnFlags) {
	root.Use = "mn [options]"
	fl := root.Flags()
	fl.Lookup("switch").DefValue = "default"
	_ = fl.Set("switch", "default") // a string flag defined by the root command: cannot fail
	// --controller keeps no value: an OpenFlow switch without one gets
	// the default controller (parseControllers).
	f.switchSpec = "default"
	root.SetHelpFunc(func(cmd *cobra.Command, _ []string) { _, _ = fmt.Fprint(cmd.OutOrStdout(), mnUsage) })
	root.SetUsageFunc(func(cmd *cobra.Command) error { _, _ = fmt.Fprint(cmd.ErrOrStderr(), mnUsage); return nil })
}

// mnUsage is Mininet 2.3's mn -h, with hymn's additions at the end.
const mnUsage = `Usage: mn [options]
(type mn -h for details)

The mn utility creates Mininet network from the command line. It can create
parametrized topologies, invoke the Mininet CLI, and run tests.

Options:
  -h, --help            show this help message and exit
  --switch=SWITCH       default|ivs|lxbr|ovs|ovsbr|ovsk|user[,param=value...]
                        user=UserSwitch ovs=OVSSwitch ovsbr=OVSBridge
                        ovsk=OVSSwitch ivs=IVSSwitch lxbr=LinuxBridge
                        default=OVSSwitch
  --host=HOST           cfs|proc|rt[,param=value...] proc=Host
                        rt=CPULimitedHost{'sched': 'rt'}
                        cfs=CPULimitedHost{'sched': 'cfs'}
  --controller=CONTROLLER
                        default|none|nox|ovsc|ref|remote|ryu[,param=value...]
                        ref=Controller ovsc=OVSController nox=NOX
                        remote=RemoteController ryu=Ryu
                        default=DefaultController none=NullController
  --link=LINK           default|ovs|tc|tcu[,param=value...] default=Link
                        tc=TCLink tcu=TCULink ovs=OVSLink
  --topo=TOPO           linear|minimal|reversed|single|torus|tree[,param=value
                        ...] minimal=MinimalTopo linear=LinearTopo
                        reversed=SingleSwitchReversedTopo
                        single=SingleSwitchTopo tree=TreeTopo torus=TorusTopo
  -c, --clean           clean and exit
  --custom=CUSTOM       read custom classes or params from .py file(s)
  --test=TEST           pingall|pingpair|iperf|iperfudp|all|none|build
  -x, --xterms          spawn xterms for each node
  -i IPBASE, --ipbase=IPBASE
                        base IP address for hosts
  --mac                 automatically set host MACs
  --arp                 set all-pairs ARP entries
  -v VERBOSITY, --verbosity=VERBOSITY
                        debug|info|output|warning|warn|error|critical
  --innamespace         sw and ctrl in namespace?
  --listenport=LISTENPORT
                        base port for passive switch listening
  --nolistenport        don't use passive listening port
  --pre=PRE             CLI script to run before tests
  --post=POST           CLI script to run after tests
  --pin                 pin hosts to CPU cores (requires --host cfs or --host
                        rt)
  --nat                 [option=val...] adds a NAT to the topology that
                        connects Mininet hosts to the physical network.
                        Warning: This may route any traffic on the machine
                        that uses Mininet's IP subnet into the Mininet
                        network. If you need to change Mininet's IP subnet,
                        see the --ipbase option.
  --version             prints the version and exits
  -w, --wait            wait for switches to connect
  -t WAIT, --twait=WAIT
                        timed wait (s) for switches to connect
  --cluster=server1,server2...
                        run on multiple servers (experimental!)
  --placement=block|random
                        node placement for --cluster (experimental!)

hymn (running as mn) also takes:
  --switch=bpf          a MAC-learning switch in eBPF on each port's tc
                        ingress (no bridge device, no STP)
  --switch=auto         hymn's own default: bpf for loop-free topologies
                        without STP, Linux bridges (lxbr) otherwise
  --nodes=netns|vm      backend of the hosts
  --links=veth|sriov[,...]
                        link backend
`
