package vm_test

import (
	"context"
	"fmt"
	"log"
	"net/netip"

	"github.com/hymn-net/hymn/internal/owner"
	"github.com/hymn-net/hymn/links"
	"github.com/hymn-net/hymn/nodes"
	"github.com/hymn-net/hymn/topo"
	"github.com/hymn-net/hymn/vm"
)

// A VM host h1 linked to a namespace host h2, as a network builds it: the
// veth end of h1 is created in h1's helper namespace (without an address),
// then AttachIntf carries it into the guest.
func ExampleNew() {
	ctx := context.Background()
	run := owner.NewRunID()
	cfg := vm.Config{Name: "h1", Namespace: owner.NamespaceName(run, "h1"), Logf: log.Printf}
	// Topology parameters as Mininet's addHost passes them.
	if err := vm.ParseParams(&cfg, map[string]string{"cpus": "1", "memory": "256M"}); err != nil {
		log.Fatal(err)
	}
	h1, err := vm.New(ctx, cfg) // boots, prints "*** VM h1 ready in 3.1 s"
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := h1.Delete(); err != nil {
			log.Print(err)
		}
	}()
	h2, err := nodes.New(nodes.Config{Name: "h2", Kind: topo.KindHost, Namespace: owner.NamespaceName(run, "h2")})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		if err := h2.Delete(); err != nil {
			log.Print(err)
		}
	}()
	if _, err := links.CreateVeth(links.End{NS: h1, Name: "h1-eth0"}, links.End{NS: h2, Name: "h2-eth0", IP: netip.MustParsePrefix("10.0.0.2/8")}); err != nil {
		log.Fatal(err)
	}
	if err := h1.AttachIntf(ctx, "h1-eth0", nil, netip.MustParsePrefix("10.0.0.1/8")); err != nil {
		log.Fatal(err)
	}
	out, _ := h1.Cmd(ctx, "ping -c1 10.0.0.2")
	fmt.Print(out)
}
