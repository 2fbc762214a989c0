package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"time"

	"github.com/hymn-net/hymn/internal/netnsx"
	"github.com/hymn-net/hymn/internal/tools"
	"github.com/hymn-net/hymn/links"
)

// The kernel's VXLAN device takes a frame with its VNI from any sender
// that reaches its UDP port, whatever its remote and local addresses say
// (checked: a unicast-remote device bound to a local address counts and
// delivers frames a third machine sends it). So each worker installs a
// filter of its own in the underlay: an nftables table of the run whose
// rules drop, for each VNI of its cut links, a tunnel frame that does not
// come from that link's peer worker or does not arrive at this worker's
// address. Frames of other VNIs, and all other traffic, are not its
// business and pass. The table lives in the underlay namespace (a pod's,
// a local machine's) and is removed by the worker with its cut links; a
// worker killed outright leaves it to the namespace's end (the pod's, the
// local machine's) or, in a machine's own namespace, to hymn clean
// (RemoveStaleFilters).

// tunnelFilter is the run's nftables table in one underlay namespace.
type tunnelFilter struct {
	ns    links.Namespace
	table string
	port  int
}

// filterRule admits the tunnel frames of one VNI from Remote to Local only.
type filterRule struct {
	VNI           int
	Local, Remote netip.Addr
}

// filterTable names the run's table: hymn-<run>-vxlan.
func filterTable(run string) string { return "hymn-" + run + "-vxlan" }

// nftTimeout bounds one nft call.
const nftTimeout = 30 * time.Second

// set replaces the table's rules with rules, in one nftables transaction:
// there is no moment without a filter once one is installed.
func (f *tunnelFilter) set(rules []filterRule) error {
	var b strings.Builder
	// Declaring the table first makes the delete succeed when there is
	// none yet; both and the new table are one transaction.
	fmt.Fprintf(&b, "table inet %s {}\ndelete table inet %s\n", f.table, f.table)
	fmt.Fprintf(&b, "table inet %s {\n\tchain input {\n\t\ttype filter hook input priority -150; policy accept;\n", f.table)
	for _, r := range rules {
		if !r.Local.IsValid() || !r.Remote.IsValid() || r.Local.Is4() != r.Remote.Is4() {
			return fmt.Errorf("tunnel filter: VNI %d: local %v and remote %v are not addresses of one family", r.VNI, r.Local, r.Remote)
		}
		if r.VNI < 1 || r.VNI > MaxVNI {
			return fmt.Errorf("tunnel filter: VNI %d is outside 1-%d", r.VNI, MaxVNI)
		}
		// The VNI is bits 32-55 of the VXLAN header, after UDP's 8 bytes.
		match := fmt.Sprintf("udp dport %d @th,96,24 %d", f.port, r.VNI)
		fam, other := "ip", "ipv6"
		if !r.Remote.Is4() {
			fam, other = "ip6", "ipv4"
		}
		// Counters show an operator (nft list table) what was dropped.
		fmt.Fprintf(&b, "\t\tmeta nfproto %s %s counter drop\n", other, match)
		fmt.Fprintf(&b, "\t\t%s %s saddr != %s counter drop\n", match, fam, r.Remote)
		fmt.Fprintf(&b, "\t\t%s %s daddr != %s counter drop\n", match, fam, r.Local)
	}
	b.WriteString("\t}\n}\n")
	if err := f.nft(b.String()); err != nil {
		return fmt.Errorf("tunnel filter: installing table inet %s: %w", f.table, err)
	}
	return nil
}

// remove deletes the table; one already gone is not an error.
func (f *tunnelFilter) remove() error {
	if err := f.nft(fmt.Sprintf("table inet %s {}\ndelete table inet %s\n", f.table, f.table)); err != nil {
		return fmt.Errorf("tunnel filter: removing table inet %s: %w", f.table, err)
	}
	return nil
}

// nft runs nft -f - in the filter's namespace with script on its input.
func (f *tunnelFilter) nft(script string) error {
	path, err := exec.LookPath("nft")
	if err != nil {
		return tools.Missing("nft")
	}
	ctx, cancel := context.WithTimeout(context.Background(), nftTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := netnsx.Launch(f.ns.NsHandle(), cmd.Start); err != nil {
		return err
	}
	if err := cmd.Wait(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("nft: %s", clip(strings.TrimSpace(out.String()), 400))
		}
		return err
	}
	return nil
}
