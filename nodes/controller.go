package nodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hymn-net/hymn/internal/proctree"
)

// Controller kinds, as mn's --controller names them.
const (
	ControllerDefault = "default" // Mininet's DefaultController: ref if installed, else ovsc
	ControllerRef     = "ref"     // the OpenFlow reference controller ("controller")
	ControllerOVSC    = "ovsc"    // Open vSwitch's ovs-testcontroller (Mininet's OVSController)
	ControllerRemote  = "remote"  // a controller the user runs
)

// DefaultControllerPort is Mininet's (IANA's) OpenFlow port.
const DefaultControllerPort = 6653

// ControllerRunDir holds a record (pid and start time) and the log of every
// controller process hymn runs, so hymn clean can stop one a killed hymn
// left behind.
const ControllerRunDir = "/run/hymn/controllers"

// ControllerConfig says which controller to run or reach.
type ControllerConfig struct {
	Name string // c0
	Kind string // default, ref, ovsc or remote
	IP   string // where it listens; "" is 127.0.0.1
	// Port is where it listens; 0 is 6653, or for a controller hymn runs
	// the first free port from 6653 (another network may hold 6653).
	Port int
	// Record names the controller's record and log in ControllerRunDir
	// (hymn-<run>-c0); "" for none.
	Record string
	// Relay is the Unix socket the network's Open vSwitch connects to;
	// hymn relays it to IP:Port from its own (the root) namespace, where
	// the controller listens.
	Relay string
	// Protocols are the OpenFlow versions a controller hymn runs speaks
	// ("OpenFlow10,OpenFlow13"); "" is OpenFlow10, the version
	// ovs-testcontroller documents as its default (Debian's build would
	// otherwise negotiate 1.5 with Open vSwitch).
	Protocols string
	// Switches is how many switches will connect. ovs-testcontroller
	// serves at most 16 (its MAX_SWITCHES; the 17th connection is
	// refused, which is why Mininet's linear,20 with ovsc hangs), so a
	// controller hymn runs for more switches is several processes behind
	// one relay: a learning switch's state is per switch, so splitting the
	// switches among them changes nothing they do.
	Switches int
	Logf     func(format string, args ...any) // commands and steps (-v debug); nil for none
	Warnf    func(format string, args ...any) // warnings; nil for none
}

// Controller is a running OpenFlow controller node (or a remote one hymn
// relays the switches to).
type Controller struct {
	cfg     ControllerConfig
	class   string
	command string // the program a local controller runs
	d       *daemon
	relay   *relay
	// extra are the further processes of a controller serving more
	// switches than one process accepts: started with it for the
	// switches it was told of, and by the relay when a switch added
	// later finds every process full.
	mu    sync.Mutex
	extra []*daemon
	// owners maps where each local process listens (ip:port) to it, once
	// its listening socket was seen to be its own (under ownersMu: mu is
	// held while a process is added).
	ownersMu sync.Mutex
	owners   map[string]*daemon
}

// maxPortAttempts bounds how many ports hymn picks for a controller whose
// picked port another process took before the controller bound it.
const maxPortAttempts = 3

// beforeControllerStart, when set (tests), runs between picking a
// controller's port and starting its process: where another process may
// take the port.
var beforeControllerStart func(ip string, port int)

// maxSwitchesPerProcess is ovs-testcontroller's MAX_SWITCHES.
const maxSwitchesPerProcess = 16

// ResolveControllerKind maps default to what Mininet's findController would
// pick: the reference controller if installed, else ovs-testcontroller.
func ResolveControllerKind(kind string) (string, error) {
	switch kind {
	case ControllerDefault:
		if _, err := exec.LookPath("controller"); err == nil {
			return ControllerRef, nil
		}
		if _, err := exec.LookPath("ovs-testcontroller"); err == nil {
			return ControllerOVSC, nil
		}
		return "", errors.New("could not find a default OpenFlow controller (apt-get install openvswitch-testcontroller)")
	case ControllerRef, ControllerRemote:
		return kind, nil
	case ControllerOVSC:
		if _, err := exec.LookPath("ovs-testcontroller"); err != nil {
			return "", errors.New("ovs-testcontroller is not installed (apt-get install openvswitch-testcontroller)")
		}
		return kind, nil
	}
	return "", fmt.Errorf("unknown controller %q: use default, ref, ovsc, remote or none", kind)
}

// StartController starts a local controller (or checks a remote one) and
// the relay from the switches' socket to it.
func StartController(ctx context.Context, cfg ControllerConfig) (_ *Controller, err error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Warnf == nil {
		cfg.Warnf = func(string, ...any) {}
	}
	if cfg.IP == "" {
		cfg.IP = "127.0.0.1"
	}
	kind, err := ResolveControllerKind(cfg.Kind)
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", cfg.Name, err)
	}
	c := &Controller{cfg: cfg}
	defer func() {
		if err != nil {
			_ = c.Stop() // best effort: err is the one to report
		}
	}()
	switch kind {
	case ControllerRemote:
		c.class = "RemoteController"
		if c.cfg.Port == 0 {
			c.cfg.Port = DefaultControllerPort
		}
		if !listening(c.Addr()) {
			cfg.Warnf("Unable to contact the remote controller at %s\n", c.Addr())
		}
	default:
		c.class = "OVSController"
		command := "ovs-testcontroller"
		if kind == ControllerRef {
			c.class = "Controller"
			if _, err := exec.LookPath("controller"); err == nil {
				command = "controller"
			} else if _, err := exec.LookPath(command); err != nil {
				return nil, fmt.Errorf("controller %s: neither controller nor ovs-testcontroller is installed (apt-get install openvswitch-testcontroller)", cfg.Name)
			}
		}
		c.command = command
		// A port hymn picked that someone took before the controller
		// could bind it is given up for another; a port the user named is
		// refused.
		auto := c.cfg.Port == 0
		for attempt := 1; ; attempt++ {
			if err := c.pickPort(); err != nil {
				return nil, err
			}
			if beforeControllerStart != nil {
				beforeControllerStart(c.cfg.IP, c.cfg.Port)
			}
			d, err := c.startProcess(command, c.cfg.IP, c.cfg.Port, "")
			if err == nil {
				c.d = d
				break
			}
			if !auto || !errors.Is(err, errListenerTaken) || attempt == maxPortAttempts {
				return nil, err
			}
			cfg.Warnf("*** %v; trying another port\n", err)
			c.cfg.IP, c.cfg.Port = cfg.IP, 0
		}
	}
	targets := []string{c.Addr()}
	for k := 1; c.d != nil && cfg.Relay != "" && k*maxSwitchesPerProcess < cfg.Switches; k++ {
		addr, err := c.addProcess()
		if err != nil {
			return nil, err
		}
		targets = append(targets, addr)
	}
	if len(targets) > 1 {
		cfg.Logf("*** %s: %d switches: %d %s processes (each takes at most %d)\n", cfg.Name, cfg.Switches, len(targets), c.command, maxSwitchesPerProcess)
	}
	if cfg.Relay != "" {
		var grow func() (string, error)
		if c.d != nil {
			grow = c.addProcess
		}
		var check func(string) error
		if c.d != nil {
			check = func(target string) error {
				err := c.checkTarget(target)
				if err != nil {
					cfg.Warnf("*** %s: not connecting a switch to tcp:%s: %v\n", cfg.Name, target, err)
				}
				return err
			}
		}
		if c.relay, err = newRelay(cfg.Name, cfg.Relay, targets, grow, check, cfg.Logf); err != nil {
			return nil, fmt.Errorf("controller %s: %w", cfg.Name, err)
		}
		cfg.Logf("*** %s: relaying %s to tcp:%s\n", cfg.Name, cfg.Relay, c.Addr())
	}
	return c, nil
}

// addProcess starts one more process of a local controller and returns
// where it listens: port 6653 on the next free loopback address when the
// first process took 6653 on one (so its traffic too is where tshark looks),
// else the first free port after the last one's.
func (c *Controller) addProcess() (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := 1 + len(c.extra)
	ip, port := c.cfg.IP, 0
	var err error
	if c.cfg.Port == DefaultControllerPort && strings.HasPrefix(ip, "127.") {
		ip, port, err = freeAddr("127.0.0.1", DefaultControllerPort)
	} else {
		port, err = freePort(ip, c.cfg.Port+k)
	}
	if err != nil {
		return "", fmt.Errorf("controller %s: %w", c.cfg.Name, err)
	}
	d, err := c.startProcess(c.command, ip, port, fmt.Sprintf("-%d", k))
	if err != nil {
		return "", err
	}
	c.extra = append(c.extra, d)
	return net.JoinHostPort(ip, strconv.Itoa(port)), nil
}

// pickPort keeps a given port (Mininet refuses one in use) and otherwise
// takes 6653 on the first loopback address where it is free, so networks
// can run side by side and every one's OpenFlow traffic is still on lo's
// port 6653, the one Mininet's tools (tshark -i lo -Y openflow_v1, whose
// dissector decodes that port only) look at. Only when no loopback address
// has it free (a controller listening on every address) does it take
// another port, with a warning.
func (c *Controller) pickPort() error {
	if c.cfg.Port != 0 {
		if listening(c.Addr()) {
			return fmt.Errorf("controller %s: please shut down the controller which is running on port %d", c.cfg.Name, c.cfg.Port)
		}
		return nil
	}
	want := c.cfg.IP
	ip, p, err := freeAddr(c.cfg.IP, DefaultControllerPort)
	if err != nil {
		return fmt.Errorf("controller %s: %w", c.cfg.Name, err)
	}
	c.cfg.IP, c.cfg.Port = ip, p
	switch {
	case p != DefaultControllerPort:
		c.cfg.Warnf("*** %s: port %d is in use; listening on %d\n", c.cfg.Name, DefaultControllerPort, p)
	case ip != want:
		c.cfg.Logf("*** %s: %s:%d is in use (another network's controller?); listening on %s\n", c.cfg.Name, want, DefaultControllerPort, c.Addr())
	}
	return nil
}

// loopbackAddrs is how many addresses of 127.0.0.0/8 (from 127.0.0.1)
// freeAddr tries port 6653 on: one per network running at once.
const loopbackAddrs = 64

// freeAddr returns where a controller can listen: port on ip if it is
// free, else, for 127.0.0.1, port on the next free loopback address
// (127.0.0.2, ...), else the first free port after port on ip.
func freeAddr(ip string, port int) (string, int, error) {
	if ip != "127.0.0.1" {
		p, err := freePort(ip, port)
		return ip, p, err
	}
	for k := 1; k <= loopbackAddrs; k++ {
		addr := fmt.Sprintf("127.0.0.%d", k)
		if canListen(addr, port) {
			return addr, port, nil
		}
	}
	p, err := freePort(ip, port+1)
	return ip, p, err
}

// canListen reports whether nothing listens on ip:port.
func canListen(ip string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close() // a probe: it accepted nothing
	return true
}

// freePort returns the first port from `from` that nothing listens on.
func freePort(ip string, from int) (int, error) {
	for p := from; p < from+200 && p < 65536; p++ {
		if canListen(ip, p) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port in %d-%d", from, from+199)
}

// startProcess starts one controller process listening on ip:port; suffix
// tells its record and log from the controller's first process.
func (c *Controller) startProcess(command, ip string, port int, suffix string) (*daemon, error) {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	record := c.cfg.Record
	if record != "" {
		record += suffix
	}
	args := []string{"ptcp:" + strconv.Itoa(port) + ":" + ip}
	if err := os.MkdirAll(ControllerRunDir, 0o700); err != nil {
		return nil, err
	}
	if command == "ovs-testcontroller" {
		protocols := c.cfg.Protocols
		if protocols == "" {
			protocols = "OpenFlow10"
		}
		args = append(args, "--protocols="+protocols)
	}
	if command == "ovs-testcontroller" && record != "" {
		// Its control socket would go to /var/run/openvswitch, which
		// exists only while the system's Open vSwitch runs.
		args = append(args, "--unixctl="+filepath.Join(ControllerRunDir, record+".ctl"))
	}
	cmd := exec.Command(command, args...)
	cmd.Env = append(os.Environ(), "OVS_RUNDIR="+ControllerRunDir)
	if record != "" {
		log, err := os.OpenFile(filepath.Join(ControllerRunDir, record+".log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, err
		}
		defer func() { _ = log.Close() }() // the daemon writes through its own copy; this one is never written
		cmd.Stdout, cmd.Stderr = log, log
	}
	d, err := startDaemon(-1, cmd)
	if err != nil {
		return nil, fmt.Errorf("controller %s: starting %s: %w", c.cfg.Name, command, err)
	}
	c.cfg.Logf("*** %s: %s started: pid %d\n", c.cfg.Name, strings.Join(cmd.Args, " "), cmd.Process.Pid)
	if record != "" {
		rec := fmt.Sprintf("%d %d\n", cmd.Process.Pid, startTime(cmd.Process.Pid))
		if err := os.WriteFile(filepath.Join(ControllerRunDir, record+".pid"), []byte(rec), 0o600); err != nil {
			d.stop()
			return nil, err
		}
	}
	// Something answering on addr is not enough: the socket listening
	// there must be the process's own, or the switches would be handed
	// to whoever bound the port after it was found free.
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := c.owns(d, ip, port)
		if errors.Is(err, errListenerTaken) {
			d.stop()
			return nil, fmt.Errorf("controller %s: %s is not the controller's: %w, not %s (pid %d), which hymn started", c.cfg.Name, addr, err, command, cmd.Process.Pid)
		}
		if err != nil {
			d.stop()
			return nil, fmt.Errorf("controller %s: checking who listens on %s: %w", c.cfg.Name, addr, err)
		}
		if ok {
			break
		}
		if d.exited() {
			d.stop()
			return nil, fmt.Errorf("controller %s: %s exited at once (its log: %s)", c.cfg.Name, command, filepath.Join(ControllerRunDir, record+".log"))
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("controller %s: %s does not listen on %s", c.cfg.Name, command, addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.ownersMu.Lock()
	if c.owners == nil {
		c.owners = map[string]*daemon{}
	}
	c.owners[addr] = d
	c.ownersMu.Unlock()
	c.cfg.Logf("*** %s: listening on %s (pid %d's own socket)\n", c.cfg.Name, addr, cmd.Process.Pid)
	return d, nil
}

// owns reports whether daemon d is the process listening on ip:port (false
// while nothing listens there yet); an error wrapping errListenerTaken
// names another process that does.
func (c *Controller) owns(d *daemon, ip string, port int) (bool, error) {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false, fmt.Errorf("address %q: %w", ip, err)
	}
	return checkListener(d.cmd.Process.Pid, a, port)
}

// checkTarget checks, before the relay connects a switch to target, that
// the controller process started for it still listens there itself: a
// process that died leaves its port to anyone.
func (c *Controller) checkTarget(target string) error {
	c.ownersMu.Lock()
	d := c.owners[target]
	c.ownersMu.Unlock()
	if d == nil {
		return fmt.Errorf("no controller process of %s listens on %s", c.cfg.Name, target)
	}
	if d.exited() {
		return fmt.Errorf("%s (pid %d) has exited", c.command, d.cmd.Process.Pid)
	}
	host, p, err := net.SplitHostPort(target)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return err
	}
	ok, err := c.owns(d, host, port)
	if err == nil && !ok {
		err = fmt.Errorf("%s (pid %d) no longer listens on %s", c.command, d.cmd.Process.Pid, target)
	}
	return err
}

// Name returns the controller's name.
func (c *Controller) Name() string { return c.cfg.Name }

// Addr returns where the controller listens (ip:port).
func (c *Controller) Addr() string {
	return net.JoinHostPort(c.cfg.IP, strconv.Itoa(c.cfg.Port))
}

// Class is the Mininet class this controller corresponds to.
func (c *Controller) Class() string { return c.class }

// Pid is the controller process's pid; for a remote controller, hymn's
// own (which relays to it).
func (c *Controller) Pid() int {
	if c.d != nil {
		return c.d.cmd.Process.Pid
	}
	return os.Getpid()
}

// Connections returns how many switches are connected to the controller
// through hymn's relay (connections the controller has answered).
func (c *Controller) Connections() int {
	if c.relay == nil {
		return 0
	}
	return int(c.relay.answered.Load())
}

// Processes is how many processes serve the controller (0 for a remote
// one): one per 16 switches for ovs-testcontroller.
func (c *Controller) Processes() int {
	if c.d == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return 1 + len(c.extra)
}

// Target is what switches are told to connect to.
func (c *Controller) Target() string {
	if c.cfg.Relay != "" {
		return "unix:" + c.cfg.Relay
	}
	return "tcp:" + c.Addr()
}

// String is Mininet's repr: <OVSController c0: 127.0.0.1:6653 pid=1234>.
func (c *Controller) String() string {
	return fmt.Sprintf("<%s %s: %s:%d pid=%d> ", c.class, c.cfg.Name, c.cfg.IP, c.cfg.Port, c.Pid())
}

// Stop stops the relay and the controller processes and removes their
// records.
func (c *Controller) Stop() error {
	if c.relay != nil {
		c.relay.close()
		c.relay = nil
	}
	// The relay is closed: no process is being added.
	c.mu.Lock()
	defer c.mu.Unlock()
	records := []string{c.cfg.Record}
	for k := range c.extra {
		records = append(records, fmt.Sprintf("%s-%d", c.cfg.Record, k+1))
	}
	for _, d := range append([]*daemon{c.d}, c.extra...) {
		if d != nil {
			c.cfg.Logf("*** %s: stopping pid %d\n", c.cfg.Name, d.cmd.Process.Pid)
			d.stop()
		}
	}
	c.d, c.extra = nil, nil
	if c.cfg.Record != "" {
		for _, r := range records {
			c.cfg.Logf("*** %s: rm %s.{pid,log,ctl}\n", c.cfg.Name, filepath.Join(ControllerRunDir, r))
			for _, ext := range []string{".pid", ".log", ".ctl"} {
				// Best effort (a .ctl the controller never made is not
				// there): what stays, hymn clean's RemoveControllers removes.
				_ = os.Remove(filepath.Join(ControllerRunDir, r+ext))
			}
		}
		_ = os.Remove(ControllerRunDir) // only if empty
	}
	return nil
}

// RemoveControllers stops the controller processes recorded under names
// starting with prefix (hymn-<run>-) that still run, and removes their
// records: what hymn clean needs after a kill -9. A process is only killed
// if its start time matches the record, so a reused pid is safe.
func RemoveControllers(prefix string) (int, error) {
	entries, err := os.ReadDir(ControllerRunDir)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	killed := 0
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		path := filepath.Join(ControllerRunDir, e.Name())
		if strings.HasSuffix(e.Name(), ".pid") {
			var pid int
			var st uint64
			if data, err := os.ReadFile(path); err == nil {
				if _, err := fmt.Sscan(string(data), &pid, &st); err == nil && pid > 0 && startTime(pid) == st {
					_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH: it died meanwhile, as wanted
					killed++
				}
			}
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	_ = os.Remove(ControllerRunDir) // only if empty: other runs' records may be there
	return killed, errors.Join(errs...)
}

func startTime(pid int) uint64 {
	f := proctree.StatFields(pid)
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

func listening(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	_ = c.Close() // a probe connection
	return true
}

// relay accepts the switches' connections on a Unix socket and carries
// each to the controller over TCP from hymn's namespace: the switches'
// namespace has no route to the root namespace's loopback, and this way
// the OpenFlow traffic is on the root namespace's lo, where Mininet's is.
type relay struct {
	ln      net.Listener
	name    string
	targets []string // the controller's processes; each switch goes to the least busy (under mu)
	load    []int    // open connections per target (under mu)
	// grow starts another process when every one serves
	// maxSwitchesPerProcess switches; nil for a remote controller.
	grow func() (string, error)
	// check says whether a target is still the controller's own process
	// before a switch is connected to it; nil for a remote controller.
	check  func(target string) error
	pickMu sync.Mutex // one pick at a time, so that one process is started for the 17th switch, not one per switch
	logf   func(string, ...any)
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
	// answered counts the open switch connections whose handshake is
	// done: the switch has sent its OFPT_FEATURES_REPLY, so the
	// controller knows it before any packet-in (TCP keeps the order).
	answered atomic.Int64
}

func newRelay(name, path string, targets []string, grow func() (string, error), check func(string) error, logf func(string, ...any)) (*relay, error) {
	_ = os.Remove(path) // a stale socket, if any: Listen reports what matters
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("relay socket: %w", err)
	}
	r := &relay{ln: ln, name: name, targets: targets, load: make([]int, len(targets)), grow: grow, check: check, logf: logf, conns: map[net.Conn]bool{}}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

func (r *relay) track(c net.Conn, add bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if add {
		if r.closed {
			_ = c.Close() // refused: the relay is closing
			return false
		}
		r.conns[c] = true
	} else {
		delete(r.conns, c)
	}
	return true
}

func (r *relay) serve() {
	defer r.wg.Done()
	for {
		in, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			// Closing an end of a relayed connection only ends it, and the
			// copies end when either side does: nothing to report.
			defer func() { _ = in.Close() }()
			if !r.track(in, true) {
				return
			}
			defer r.track(in, false)
			k, target := r.pick()
			defer func() { r.mu.Lock(); r.load[k]--; r.mu.Unlock() }()
			if r.check != nil && r.check(target) != nil {
				return // check warned; the switch retries
			}
			out, err := net.DialTimeout("tcp", target, 2*time.Second)
			if err != nil {
				r.logf("*** %s: connecting a switch to tcp:%s: %v\n", r.name, target, err)
				return // the switch retries, as it would against a controller that is down
			}
			r.logf("*** %s: switch connected (tcp %s -> %s)\n", r.name, out.LocalAddr(), target)
			defer func() { _ = out.Close() }()
			if !r.track(out, true) {
				return
			}
			defer r.track(out, false)
			done := make(chan struct{}, 2)
			go func() { r.switchToController(in, out); done <- struct{}{} }()
			go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
			<-done
		}()
	}
}

// pick assigns a new switch connection to the least busy process,
// starting another first when every process serves its maximum (a switch
// added to a running network). If that fails, the switch goes to the
// least busy one, which refuses it as it would without hymn.
func (r *relay) pick() (int, string) {
	r.pickMu.Lock()
	defer r.pickMu.Unlock()
	r.mu.Lock()
	k := 0
	for j := range r.load {
		if r.load[j] < r.load[k] {
			k = j
		}
	}
	full := r.grow != nil && r.load[k] >= maxSwitchesPerProcess
	r.mu.Unlock()
	if full {
		addr, err := r.grow()
		if err != nil {
			r.logf("*** %s: every process serves %d switches, and another did not start: %v\n", r.name, maxSwitchesPerProcess, err)
		} else {
			r.logf("*** %s: every process serves %d switches: started another on %s\n", r.name, maxSwitchesPerProcess, addr)
		}
		r.mu.Lock()
		if err == nil {
			r.targets = append(r.targets, addr)
			r.load = append(r.load, 0)
			k = len(r.targets) - 1
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.load[k]++
	return k, r.targets[k]
}

func (r *relay) close() {
	_ = r.ln.Close() // nothing to report: close only ends the relay
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		_ = c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
}

// switchToController copies the switch's OpenFlow messages to the
// controller, counting the connection as answered at the switch's
// features reply. A controller that never asks for features counts after
// two seconds of a working connection.
func (r *relay) switchToController(in, out net.Conn) {
	var counted atomic.Bool
	count := func() {
		if counted.CompareAndSwap(false, true) {
			r.answered.Add(1)
		}
	}
	timer := time.AfterFunc(2*time.Second, count)
	defer func() {
		timer.Stop()
		if counted.Load() {
			r.answered.Add(-1)
		}
	}()
	hdr := make([]byte, 8)
	buf := make([]byte, 64*1024)
	for {
		if _, err := io.ReadFull(in, hdr); err != nil {
			return
		}
		length := int(hdr[2])<<8 | int(hdr[3])
		if length < 8 {
			return // not OpenFlow
		}
		body := buf[:length-8]
		if _, err := io.ReadFull(in, body); err != nil {
			return
		}
		if _, err := out.Write(append(hdr[:8:8], body...)); err != nil {
			return
		}
		const ofptFeaturesReply = 6
		if hdr[1] == ofptFeaturesReply {
			count()
		}
	}
}
