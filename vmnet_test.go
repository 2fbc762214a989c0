package hymn

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
)

// vmAndNamespaceHost is s1 with h1, a VM whose link has params, and h2, a
// namespace, once the checks a test that boots a VM needs have passed.
func vmAndNamespaceHost(t *testing.T, params topo.Params) *topo.Topo {
	t.Helper()
	testenv.Root(t)
	testenv.Tools(t, "qemu-system-x86_64")
	if testing.Short() {
		t.Skip("boots a VM")
	}
	top := topo.New()
	s1 := top.AddSwitch("s1")
	top.AddLink(top.AddHost("h1", topo.Params{"backend": "vm", "memory": "256M"}), s1, params)
	top.AddLink(top.AddHost("h2"), s1)
	return top
}

// A mixed network: h1 is a VM, h2 a namespace, joined by a switch, the
// VM's link emulated (2 ms each way). Ping, iperf, a shell command in the
// guest and link down/up must behave as on namespaces only.
func TestMixedVMAndNamespaceHosts(t *testing.T) {
	top := vmAndNamespaceHost(t, topo.Params{"delay": "2ms"})
	net := startNet(t, top, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if loss, err := net.PingAll(ctx, 0); err != nil || loss != 0 {
		t.Fatalf("pingall: %v%% %v", loss, err)
	}
	// The echo's RTT is the monotonic clock read before the request is
	// sent and after the reply is read (ns): a pause of the test or the
	// guest only lengthens it, and the emulated delay is never less than
	// configured, so 4 ms is a floor known to the clock's read (1 µs is
	// generous); ten of it is allowed.
	res, err := net.PingFull(ctx, []string{"h2", "h1"}, 0)
	if err != nil || len(res) == 0 || res[0].Received == 0 {
		t.Errorf("ping h2 -> h1 through the VM's emulated link: %+v %v", res, err)
	} else {
		testenv.JudgeTime(t, testenv.Timing{Quantity: "RTT h2 -> h1 through the VM's emulated link (2 ms each way)",
			Got: res[0].RTTMin, Target: 4 * time.Millisecond, Tolerance: 10 * time.Microsecond, Bound: testenv.AtLeast,
			Resolution: testenv.Ms(time.Microsecond, "the monotonic clock read around the echo (ns): a pause only lengthens it")})
	}
	h1, _ := net.Node("h1")
	out, err := h1.Cmd(ctx, "ip -o addr show h1-eth0")
	if err != nil || !strings.Contains(out, "10.0.0.1/8") {
		t.Errorf("h1 ip addr in the guest: %q %v", out, err)
	}
	if r, err := net.Iperf(ctx, "h2", "h1", time.Second); err != nil || r.ServerBps <= 0 {
		t.Errorf("iperf h2 -> h1 (VM): %+v %v", r, err)
	}
	if err := net.ConfigLinkStatus("s1", "h1", "down"); err != nil {
		t.Fatal(err)
	}
	if loss, _ := net.Ping(ctx, []string{"h2", "h1"}, time.Second); loss != 100 {
		t.Errorf("ping over the VM's downed link: %v%% lost, want 100", loss)
	}
	if err := net.ConfigLinkStatus("s1", "h1", "up"); err != nil {
		t.Fatal(err)
	}
	var loss float64
	for try := 0; try < 10; try++ {
		if loss, _ = net.Ping(ctx, []string{"h2", "h1"}, time.Second); loss == 0 {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	if loss != 0 {
		t.Errorf("after link up: %v%% lost", loss)
	}
	// A VM host added to the running network boots as Build would boot
	// it, and its link is hot-plugged.
	if err := net.AddNode(ctx, "h3", topo.KindHost, topo.Params{"backend": "vm", "memory": "256M"}); err != nil {
		t.Fatal(err)
	}
	if _, err := net.AddLink(ctx, "h3", "s1", nil); err != nil {
		t.Fatal(err)
	}
	h3, _ := net.Node("h3")
	if _, ok := h3.(*vm.Node); !ok {
		t.Fatalf("h3, added live with backend=vm, is a %T", h3)
	}
	if out, err := h3.Cmd(ctx, "cat /sys/class/dmi/id/sys_vendor; ip -o addr show h3-eth0"); err != nil || !strings.Contains(out, "QEMU") || !strings.Contains(out, "10.0.0.3/8") {
		t.Errorf("h3, added live with backend=vm: %q %v", out, err)
	}
	if loss, err := net.Ping(ctx, []string{"h2", "h3"}, time.Second); err != nil || loss != 0 {
		t.Errorf("h2 <-> h3 (a VM added live): %v%% lost, %v", loss, err)
	}
	// An emulator cannot be inserted live into a VM's plain link (its end
	// is a NIC hot-plugged into the guest); the refusal leaves the link
	// as it was.
	if err := net.SetLinkParams("h3", "s1", BothDirections, "delay 5ms"); err == nil || !strings.Contains(err.Error(), "VM node h3") {
		t.Errorf("inserting an emulator into h3's link: %v, want a refusal naming VM node h3", err)
	}
	if loss, err := net.Ping(ctx, []string{"h2", "h3"}, time.Second); err != nil || loss != 0 {
		t.Errorf("h2 <-> h3 after the refused insertion: %v%% lost, %v", loss, err)
	}
}

func TestBadVMParametersRejectedBeforeBuild(t *testing.T) {
	for params, want := range map[string]string{
		"memory=4X":                   "memory",
		"cpus=0":                      "cpus",
		"backend=cloud":               "backend",
		"image=/dev/sda":              "image",
		"image=/dev/zero":             "image",
		"machine=pc,memory-backend=m": "allow_machine_props",
		"machine=microvm":             "machine",
		"share=everything":            "share",
	} {
		k, v, _ := strings.Cut(params, "=")
		p := topo.Params{"backend": "vm", k: v}
		top := topo.New()
		top.AddLink(top.AddHost("h1", p), top.AddSwitch("s1"))
		_, err := New(top, Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: New = %v, want an error naming %q", params, err, want)
		}
	}
}
