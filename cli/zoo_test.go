package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMapAndRoutingBadInput: a malformed map, bad coordinates and bad
// routing or IPv6 flags each end with exit status 2 and one line, before
// anything is built.
func TestMapAndRoutingBadInput(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"coord.gml":   "graph [\n node [ id 0 Latitude 95 Longitude 3 ]\n]\n",
		"open.gml":    "graph [\n node [ id 0\n",
		"bad.graphml": "<graphml><graph>\n<node id=\"0\">\n</graph></graphml>\n",
		"lon.graphml": `<graphml><key id="a" for="node" attr.name="Latitude"/><key id="b" for="node" attr.name="Longitude"/><graph>
<node id="0"><data key="a">1</data><data key="b">east</data></node></graph></graphml>`,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", filepath.Join(dir, "coord.gml")}, `coord.gml:2: node "0": Latitude "95" is not a number of degrees from -90 to 90`},
		{[]string{"run", filepath.Join(dir, "open.gml")}, "open.gml:3: the file ends inside the list opened at line 2 (missing ])"},
		{[]string{"run", filepath.Join(dir, "bad.graphml")}, "bad.graphml:3: not well-formed GraphML: element <node> closed by </graph>"},
		{[]string{"run", filepath.Join(dir, "lon.graphml")}, `lon.graphml:2: node "0": Longitude "east" is not a number`},
		{[]string{"--routing", "rip"}, `--routing: unknown routing "rip"`},
		{[]string{"--ipbase6", "fd00:1::/48"}, "--ipbase6 needs --ipv6"},
		{[]string{"--ipv6", "--ipbase6", "10.0.0.0/8"}, `--ipbase6 "10.0.0.0/8" is not an IPv6 network`},
	} {
		var stdout, stderr bytes.Buffer
		code := Execute(context.Background(), append(c.args, "--test", "pingall"), nil, &stdout, &stderr)
		msg := strings.TrimSpace(stderr.String())
		if code != 2 || strings.Count(msg, "\n") != 0 || !strings.Contains(msg, c.want) {
			t.Errorf("hymn %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, msg, c.want)
		}
	}
}

func TestWantsIPv6(t *testing.T) {
	for args, want := range map[string]bool{
		"ping6 -c1 h2": true, "ping -6 -c1 h2": true, "traceroute6 h2": true,
		"ping -c1 h2": false, "echo ping6": false, "ping -c 6 h2": false, "": false,
	} {
		if got := wantsIPv6(args); got != want {
			t.Errorf("wantsIPv6(%q) = %v, want %v", args, got, want)
		}
	}
}
