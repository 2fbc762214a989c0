package cli

import (
	"strings"
	"testing"
)

// DPDK ports asked for wrongly, each a usage error (exit 2) with one line
// saying what is wrong, before anything is built.
func TestDPDKLinksUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad links value", []string{"--links", "sriov,emulator=xdp", "--link", "emu,delay=5ms", "--test", "build"}, "emulator=xdp: use afpacket or dpdk"},
		{"empty links value", []string{"--links", "sriov,emulator=", "--test", "build"}, `"emulator=" is not key=value`},
		{"veth backend", []string{"--links", "veth,emulator=dpdk", "--test", "build"}, "veth links take no options"},
		{"bad link value", []string{"--links", "sriov,sim=on", "--link", "emu,delay=5ms,emulator=bogus", "--test", "build"}, "emulator=bogus: use afpacket or dpdk"},
		{"tc link", []string{"--links", "sriov,sim=on", "--link", "tc,delay=5ms,emulator=dpdk", "--test", "build"}, `unknown option "emulator"`},
		{"veth links", []string{"--link", "emu,delay=5ms,emulator=dpdk", "--test", "build"}, "emulator=dpdk needs an SR-IOV link"},
	}
	if !dpdkBuilt {
		cases = append(cases, struct {
			name string
			args []string
			want string
		}{"not built", []string{"--topo", "linear,2", "--links", "sriov,emulator=dpdk,sim=on", "--link", "emu,delay=5ms", "--test", "pingall"},
			"this hymn binary was built without DPDK; build it with `go build -tags dpdk ./cmd/hymn`"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := run(t, c.args...)
			if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Fatalf("hymn %s: exit %d, stderr %q; want 2 and one line with %q", strings.Join(c.args, " "), code, stderr, c.want)
			}
		})
	}
}
