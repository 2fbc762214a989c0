package hymn_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/hymn-net/hymn"
	"github.com/hymn-net/hymn/mnlog"
	"github.com/hymn-net/hymn/topo"
)

// A CI test in Go: two hosts behind a switch, one router-less ping matrix,
// a command on a host, and everything gone again at the end.
func Example() {
	t := topo.New()
	s1 := t.AddSwitch("s1")
	t.AddLink(t.AddHost("h1"), s1)
	t.AddLink(t.AddHost("h2"), s1)

	net, err := hymn.New(t, hymn.Options{Log: mnlog.New(os.Stderr, mnlog.Output)})
	if err != nil {
		log.Fatal(err) // the topology is wrong: nothing was built
	}
	ctx := context.Background()
	if err := net.Start(ctx); err != nil {
		log.Fatal(err) // the half-built network is already removed
	}
	defer func() {
		if err := net.Stop(); err != nil {
			log.Print(err)
		}
	}()

	loss, err := net.PingAll(ctx, 0)
	if err != nil || loss > 0 {
		log.Fatalf("ping: %v%% lost, %v", loss, err)
	}
	h1, _ := net.Node("h1")
	out, _ := h1.Cmd(ctx, "ip -brief addr show h1-eth0")
	fmt.Print(out)
}
