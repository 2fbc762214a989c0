package netnsx

import (
	"fmt"
	"os"
	"testing"

	"github.com/hymn-net/hymn/internal/testenv"
	"github.com/vishvananda/netlink"
)

// The netlink cache keeps at most its size open, and a namespace whose
// socket it closed gets one again on its next use; Named values of one
// namespace share its handles, freed with the last.
func TestNetlinkCacheAndSharing(t *testing.T) {
	testenv.Root(t)
	old := cache.max
	cache.max = 3
	t.Cleanup(func() { cache.max = old })
	base := cache.open()
	var all []*Named
	for i := range 6 {
		n, err := CreateNamed(fmt.Sprintf("nlcache%d-%d", os.Getpid(), i))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, n)
		t.Cleanup(func() {
			if err := n.Delete(); err != nil {
				t.Error(err)
			}
		})
	}
	if got := cache.open(); got > base+3 || got > 3 {
		t.Errorf("%d netlink handles open, the cache holds 3", got)
	}
	for _, n := range all { // each again: the evicted reopen
		if err := n.Netlink(func(h *netlink.Handle) error { _, err := h.LinkByName("lo"); return err }); err != nil {
			t.Fatalf("%s after eviction: %v", n.Namespace(), err)
		}
	}
	second, err := OpenNamed(all[0].Namespace())
	if err != nil {
		t.Fatal(err)
	}
	if second.NsHandle() != all[0].NsHandle() {
		t.Errorf("a second Named opened its own namespace handle %d, not the first's %d", second.NsHandle(), all[0].NsHandle())
	}
	second.Close()
	if second.NsHandle() != -1 || all[0].NsHandle() < 0 {
		t.Errorf("after closing the second: its handle %d, the first's %d", second.NsHandle(), all[0].NsHandle())
	}
	if err := second.Netlink(func(*netlink.Handle) error { return nil }); err != ErrClosed {
		t.Errorf("Netlink after Close: %v, want ErrClosed", err)
	}
	if err := all[0].Netlink(func(h *netlink.Handle) error { _, err := h.LinkByName("lo"); return err }); err != nil {
		t.Errorf("the first after the second closed: %v", err)
	}
}
