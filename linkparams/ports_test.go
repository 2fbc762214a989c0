package linkparams

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hymn-net/hymn/topo"
)

func TestPorts(t *testing.T) {
	for v, want := range map[string]string{"": "", "dpdk": PortsDPDK, "DPDK": PortsDPDK, "afpacket": PortsAFPacket, "af_packet": PortsAFPacket} {
		t.Run(fmt.Sprintf("%q", v), func(t *testing.T) {
			t.Parallel()
			if got, err := ParsePorts(v); err != nil || got != want {
				t.Errorf("ParsePorts(%q) = %q, %v; want %q", v, got, err, want)
			}
		})
	}
	if p := Params(Ports(PortsDPDK), Delay(5e6)); p[PortsKey] != "dpdk" || !NeedsEmulator(p) {
		t.Errorf("Params(Ports(dpdk), Delay) = %v", p)
	}
	// The port choice alone asks for no emulator, and is no emulator key.
	if NeedsEmulator(Params(Ports(PortsDPDK))) || IsKey(PortsKey) {
		t.Error("emulator=dpdk alone asks for an emulator")
	}
	// Bad values, each named in the error.
	for _, v := range []string{"xdp", "dpdk2", " ", "netmap"} {
		t.Run(fmt.Sprintf("invalid %q", v), func(t *testing.T) {
			t.Parallel()
			_, err := PortsOf(topo.Params{PortsKey: v})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "emulator=") {
				t.Errorf("PortsOf(emulator=%q) = %v; want ErrInvalid naming emulator=", v, err)
			}
		})
	}
}

func TestLinkSpecPorts(t *testing.T) {
	p, err := ParseLinkSpec("emu,delay=5ms,emulator=dpdk")
	if err != nil || p[PortsKey] != "dpdk" || p["delay"] != "5ms" {
		t.Fatalf("ParseLinkSpec = %v, %v", p, err)
	}
	for spec, want := range map[string]string{
		"emu,delay=5ms,emulator=bogus": "emulator=bogus: use afpacket or dpdk",
		"emu,emulator=":                "emulator",
		"tc,delay=5ms,emulator=dpdk":   "unknown option \"emulator\"",
	} {
		t.Run(spec, func(t *testing.T) {
			t.Parallel()
			if _, err := ParseLinkSpec(spec); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) {
				t.Errorf("ParseLinkSpec(%s) = %v; want ErrInvalid with %q", spec, err, want)
			}
		})
	}
}
