package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/hymntest"
	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
)

// guestLo and guestEth0 are intf lines as the guest script prints them.
const (
	guestLo   = "intf lo mtu=65536 operstate=unknown address=00:00:00:00:00:00 rx_packets=4 rx_bytes=336 rx_dropped=0 tx_packets=4 tx_bytes=336 tx_dropped=0\n"
	guestEth0 = "intf h1-eth0 mtu=1500 operstate=up address=02:00:00:00:00:01 rx_packets=12 rx_bytes=1096 rx_dropped=1 tx_packets=10 tx_bytes=924 tx_dropped=2\n"
)

func TestParseGuestIntfs(t *testing.T) {
	lo := LiveIntf{Name: "lo", MAC: "00:00:00:00:00:00", MTU: 65536, State: "unknown",
		RX: Counters{Packets: 4, Bytes: 336}, TX: Counters{Packets: 4, Bytes: 336}}
	eth0 := LiveIntf{Name: "h1-eth0", MAC: "02:00:00:00:00:01", MTU: 1500, State: "up",
		RX: Counters{Packets: 12, Bytes: 1096, Dropped: 1}, TX: Counters{Packets: 10, Bytes: 924, Dropped: 2}}
	with := func(li LiveIntf, addrs ...string) LiveIntf { li.Addrs = addrs; return li }

	for _, tc := range []struct {
		name string
		out  string
		want []LiveIntf
		err  string // a part of the error; "" for none
	}{
		{
			name: "busybox ip",
			out: guestLo + guestEth0 +
				"1: lo    inet 127.0.0.1/8 scope host lo\n" +
				"2: h1-eth0    inet 10.0.0.1/8 brd 10.255.255.255 scope global h1-eth0\n" +
				"2: h1-eth0    inet6 fe80::ff:fe00:1/64 scope link \n",
			want: []LiveIntf{with(eth0, "10.0.0.1/8", "fe80::ff:fe00:1/64"), with(lo, "127.0.0.1/8")},
		},
		{
			name: "iproute2 ip, extra lines, keys and spaces",
			out: "warning: something the guest said\n\n" +
				"intf lo  mtu=65536 operstate=unknown address=00:00:00:00:00:00 rx_packets=4 rx_bytes=336 rx_dropped=0 tx_packets=4 tx_bytes=336 tx_dropped=0 speed=\n" +
				guestEth0 +
				"1: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever\n" +
				"1: lo    inet6 ::1/128 scope host \\       valid_lft forever preferred_lft forever\n" +
				"2: h1-eth0    inet 10.0.0.1/8 brd 10.255.255.255 scope global h1-eth0\\       valid_lft forever preferred_lft forever\n" +
				"trailing junk",
			want: []LiveIntf{with(eth0, "10.0.0.1/8"), with(lo, "127.0.0.1/8", "::1/128")},
		},
		{
			name: "sorted by name, addresses of unknown interfaces ignored, @peer cut",
			out: "intf veth1 mtu=1500 operstate=lowerlayerdown address=AA:BB:CC:DD:EE:FF rx_packets=0 rx_bytes=0 rx_dropped=0 tx_packets=0 tx_bytes=0 tx_dropped=0\n" +
				guestLo +
				"3: veth1@if4    inet 192.168.1.2/24 scope global veth1\n" +
				"9: newone    inet 10.9.9.9/8 scope global newone\n",
			want: []LiveIntf{lo, {Name: "veth1", MAC: "aa:bb:cc:dd:ee:ff", MTU: 1500, State: "lowerlayerdown", Addrs: []string{"192.168.1.2/24"}}},
		},
		{
			name: "no hardware address, tunnel address, point-to-point and bare addresses",
			out: "intf tun0 mtu=1400 operstate=unknown address= rx_packets=1 rx_bytes=2 rx_dropped=3 tx_packets=4 tx_bytes=5 tx_dropped=6\n" +
				"intf sit0 mtu=1480 operstate=down address=00:00:00:00 rx_packets=0 rx_bytes=0 rx_dropped=0 tx_packets=0 tx_bytes=0 tx_dropped=0\n" +
				"5: tun0    inet 10.8.0.1 peer 10.8.0.2/32 scope global tun0\n" +
				"5: tun0    inet 10.8.0.3 scope global tun0\n",
			want: []LiveIntf{
				{Name: "sit0", MAC: "00:00:00:00", MTU: 1480, State: "down"},
				{Name: "tun0", MTU: 1400, State: "unknown", Addrs: []string{"10.8.0.1/32", "10.8.0.3/32"},
					RX: Counters{Packets: 1, Bytes: 2, Dropped: 3}, TX: Counters{Packets: 4, Bytes: 5, Dropped: 6}},
			},
		},
		{name: "empty", out: "", err: "no interface listed"},
		{name: "only addresses", out: "1: lo    inet 127.0.0.1/8 scope host lo\n", err: "no interface listed"},
		{name: "no name", out: "intf\n", err: "line 1: intf line without an interface name"},
		{name: "name missing", out: "intf mtu=1500 operstate=up\n", err: "without an interface name"},
		{name: "missing counter", out: strings.Replace(guestEth0, " tx_dropped=2", "", 1), err: "interface h1-eth0: no tx_dropped"},
		{name: "missing address key", out: strings.Replace(guestLo, " address=00:00:00:00:00:00", "", 1), err: "interface lo: no address"},
		{name: "not key=value", out: strings.Replace(guestLo, "mtu=65536", "mtu 65536", 1), err: `"mtu" is not key=value`},
		{name: "key twice", out: strings.Replace(guestLo, "mtu=65536", "mtu=65536 mtu=1500", 1), err: "mtu given twice"},
		{name: "empty mtu (unreadable sysfs file)", out: strings.Replace(guestLo, "mtu=65536", "mtu=", 1), err: `mtu "" is not a number`},
		{name: "negative mtu", out: strings.Replace(guestLo, "mtu=65536", "mtu=-1", 1), err: `mtu "-1"`},
		{name: "empty operstate", out: strings.Replace(guestLo, "operstate=unknown", "operstate=", 1), err: `operstate "" is not a state`},
		{name: "odd operstate", out: strings.Replace(guestLo, "operstate=unknown", "operstate=UP;rm", 1), err: "is not a state"},
		{name: "bad MAC", out: strings.Replace(guestEth0, "02:00:00:00:00:01", "02:00:00:00:00:zz", 1), err: `address "02:00:00:00:00:zz" is not a hardware address`},
		{name: "bad counter", out: strings.Replace(guestEth0, "rx_bytes=1096", "rx_bytes=12k", 1), err: `rx_bytes "12k" is not a counter`},
		{name: "negative counter", out: strings.Replace(guestEth0, "tx_packets=10", "tx_packets=-10", 1), err: `tx_packets "-10"`},
		{name: "counter overflow", out: strings.Replace(guestEth0, "tx_packets=10", "tx_packets=18446744073709551616", 1), err: "tx_packets"},
		{name: "interface twice", out: guestLo + guestEth0 + guestLo, err: "line 3: interface lo listed twice"},
		{name: "bad address", out: guestLo + "1: lo    inet 127.0.0.300/8 scope host lo\n", err: `line 2: interface lo: address "127.0.0.300/8"`},
		{name: "bad prefix length", out: guestLo + "1: lo    inet 127.0.0.1/33 scope host lo\n", err: `address "127.0.0.1/33"`},
		{name: "bad bare address", out: guestLo + "1: lo    inet6 nonsense scope host lo\n", err: `address "nonsense"`},
		{name: "bad peer", out: guestLo + "1: lo    inet 10.0.0.1 peer 10.0.0.2/x scope host lo\n", err: `peer "10.0.0.2/x"`},
		{name: "too large", out: guestLo + strings.Repeat("x", guestIntfMaxOutput), err: "more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseGuestIntfs([]byte(tc.out))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("parseGuestIntfs: %v, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseGuestIntfs:\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// The script is what the guest runs: it must stay a valid program for
// busybox's sh (the guest's), else for the host's sh.
func TestGuestIntfScriptParses(t *testing.T) {
	argv := []string{"busybox", "sh"}
	if _, err := exec.LookPath("busybox"); err != nil {
		argv = []string{"sh"}
	}
	if out, err := exec.Command(argv[0], append(argv[1:], "-n", "-c", guestIntfScript)...).CombinedOutput(); err != nil {
		t.Fatalf("%v -n: %v\n%s", argv, err, out)
	}
}

// Two VM hosts and a namespace host h2 on a switch: h1 as VMs boot by
// default (the host's file system shared, so the guest's ip is iproute2)
// and h3 with hostfs=none (busybox alone). After h2 pings each, the
// guest's interfaces read through guestInterfaces show its eth0 with the
// planned address and MAC, up, with at least the pings counted each way,
// and loopback; a VM that has gone gives an error naming it.
func TestGuestInterfacesOfVM(t *testing.T) {
	testenv.Root(t)
	testenv.Tools(t, "qemu-system-x86_64")
	if testing.Short() {
		t.Skip("boots VMs")
	}
	macs := map[string]string{"h1": "02:00:00:00:00:01", "h3": "02:00:00:00:00:03"}
	top := topo.New()
	s1 := top.AddSwitch("s1")
	top.AddLink(top.AddHost("h1", topo.Params{"backend": "vm", "memory": "256M", "mac": macs["h1"]}), s1)
	top.AddLink(top.AddHost("h2"), s1)
	top.AddLink(top.AddHost("h3", topo.Params{"backend": "vm", "memory": "256M", "mac": macs["h3"], "hostfs": "none"}), s1)
	net := hymntest.Start(t, top, hymn.Options{})
	planned := map[string]NodeView{}
	for _, n := range topology(net).Nodes {
		planned[n.Name] = n
	}
	for _, host := range []string{"h1", "h3"} {
		t.Run(host, func(t *testing.T) {
			nv := planned[host]
			if nv.Backend != "vm" || len(nv.Intfs) != 1 || nv.Intfs[0].IP == "" || nv.Intfs[0].MAC != macs[host] {
				t.Fatalf("%s as planned: %+v, want a VM with one interface, an address and MAC %s", host, nv, macs[host])
			}
			checkGuestInterfaces(t, net, host, nv.Intfs[0])
		})
	}

	// The page's request: the node's details carry the guest's
	// interfaces.
	h, closeView, err := Handler(net, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/node?name=h3", nil))
	closeView()
	var d NodeDetails
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /api/node?name=h3: %d %s", rec.Code, rec.Body)
	}
	if d.LiveError != "" || !slices.ContainsFunc(d.Live, func(l LiveIntf) bool { return l.Name == "h3-eth0" && l.RX.Packets > 0 }) {
		t.Errorf("h3's details: %+v, want h3-eth0 live with packets", d)
	}

	h1, err := net.Node("h1")
	if err != nil {
		t.Fatal(err)
	}
	if err := h1.Close(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := guestInterfaces(ctx, h1); err == nil || !strings.Contains(err.Error(), "node h1") {
		t.Errorf("guestInterfaces on a closed VM: %v, want an error naming node h1", err)
	}
}

// checkGuestInterfaces pings VM host from h2 and checks what
// guestInterfaces reads in its guest against the planned interface.
func checkGuestInterfaces(t *testing.T, net *hymn.Network, host string, planned IntfView) {
	t.Helper()
	addr, _, _ := strings.Cut(planned.IP, "/")
	const pings = 5
	out := hymntest.Cmd(t, net, "h2", fmt.Sprintf("ping -c %d -i 0.2 -W 2 %s", pings, addr), 30*time.Second)
	if !strings.Contains(out, fmt.Sprintf("%d received", pings)) {
		t.Fatalf("h2 pinging %s (%s): %s", host, addr, out)
	}
	node, err := net.Node(host)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := node.(*vm.Node); !ok {
		t.Fatalf("%s is a %T, want a *vm.Node", host, node)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A path is a program's ip (/usr/local/bin/ip: iproute2 from the
	// host), a bare "ip" busybox's applet.
	ip, err := node.Cmd(ctx, "command -v ip")
	t.Logf("%s's ip: %q %v", host, strings.TrimSpace(ip), err)

	// Right after the start the guest may still report its interface
	// down for a moment (operstate lags the carrier): read again until it
	// is up, as a page polling the node would.
	var eth, lo *LiveIntf
	var live []LiveIntf
	start := time.Now()
	for {
		t0 := time.Now()
		live, err = guestInterfaces(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("guestInterfaces took %v: %+v", time.Since(t0), live)
		eth, lo = nil, nil
		for i := range live {
			switch live[i].Name {
			case planned.Name:
				eth = &live[i]
			case "lo":
				lo = &live[i]
			}
		}
		if eth == nil || lo == nil {
			t.Fatalf("guest interfaces %+v: want %s and lo", live, planned.Name)
		}
		if eth.State == "up" || time.Since(start) > 10*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if eth.MAC != planned.MAC {
		t.Errorf("%s MAC %s, want %s", eth.Name, eth.MAC, planned.MAC)
	}
	if !slices.Contains(eth.Addrs, planned.IP) {
		t.Errorf("%s addresses %v, want %s among them", eth.Name, eth.Addrs, planned.IP)
	}
	if eth.State != "up" || eth.MTU <= 0 {
		t.Errorf("%s state %q MTU %d, want up and an MTU", eth.Name, eth.State, eth.MTU)
	}
	if eth.RX.Packets < pings || eth.TX.Packets < pings || eth.RX.Bytes == 0 || eth.TX.Bytes == 0 {
		t.Errorf("%s counters rx %+v tx %+v, want at least %d packets each way", eth.Name, eth.RX, eth.TX, pings)
	}
	if len(lo.Addrs) == 0 || lo.Addrs[0] != "127.0.0.1/8" || lo.MTU != 65536 {
		t.Errorf("lo %+v, want 127.0.0.1/8 first and MTU 65536", *lo)
	}
	for i := 1; i < len(live); i++ {
		if live[i-1].Name >= live[i].Name {
			t.Errorf("interfaces not sorted by name: %s before %s", live[i-1].Name, live[i].Name)
		}
	}
}

// A BPF switch shares its namespace with the other switches: its details
// list its own ports and loopback, not its neighbours'.
func TestSharedSwitchShowsItsOwnPorts(t *testing.T) {
	testenv.Root(t)
	net := hymntest.Start(t, hymntest.Topo(t, "linear,3"), hymn.Options{Switch: hymn.SwitchBPF})
	h, closeView, err := Handler(net, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer closeView()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/node?name=s2", nil))
	var d NodeDetails
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("GET /api/node?name=s2: %d %s", rec.Code, rec.Body)
	}
	var names []string
	for _, l := range d.Live {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	if want := []string{"lo", "s2-eth1", "s2-eth2", "s2-eth3"}; !slices.Equal(names, want) {
		t.Errorf("s2's live interfaces: %v, want %v", names, want)
	}
}
