package topo

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestGreatCircleAndFibreDelay(t *testing.T) {
	// New York to Los Angeles is about 3936 km on the sphere.
	d := GreatCircle(40.71427, -74.00597, 34.05223, -118.24368)
	if math.Abs(d-3936) > 10 {
		t.Fatalf("NY-LA = %.1f km, want about 3936", d)
	}
	if GreatCircle(10, 20, 10, 20) != 0 {
		t.Fatal("a point's distance to itself is not 0")
	}
	// Antipodes: half the circumference.
	if got, want := GreatCircle(0, 0, 0, 180), math.Pi*EarthRadius; math.Abs(got-want) > 1e-6 {
		t.Fatalf("antipodes = %v, want %v", got, want)
	}
	// 1000 km of fibre take 1000/204218.3 s = 4.8967 ms.
	if got := FibreDelay(1000); got < 4896*time.Microsecond || got > 4897*time.Microsecond {
		t.Fatalf("FibreDelay(1000 km) = %v", got)
	}
}

func TestLoadZooAbileneBothFormats(t *testing.T) {
	var dumps []string
	for _, f := range []string{"testdata/abilene.graphml", "testdata/abilene.gml"} {
		tp, fo, err := LoadZoo(f, ZooOptions{})
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if fo.Routing != "static" || len(fo.Warnings) != 0 {
			t.Fatalf("%s: options %+v", f, fo)
		}
		var routers, hosts int
		for _, n := range tp.Nodes() {
			switch n.Kind {
			case KindRouter:
				routers++
			case KindHost:
				hosts++
			}
		}
		if routers != 11 || hosts != 11 || len(tp.Links()) != 25 {
			t.Fatalf("%s: %d routers, %d hosts, %d links; want 11, 11, 25", f, routers, hosts, len(tp.Links()))
		}
		ny, wdc := tp.Node("NewYork"), tp.Node("Washingto")
		if ny == nil || wdc == nil || tp.Node("hNewYork") == nil {
			t.Fatalf("%s: names: %v", f, nodeNames(tp.Nodes()))
		}
		if ny.Params["label"] != "New York" || ny.Params["latitude"] != "40.71427" {
			t.Fatalf("%s: NewYork params %v", f, ny.Params)
		}
		var b strings.Builder
		for _, l := range tp.Links() {
			b.WriteString(l.Node1 + "-" + l.Node2 + " " + l.Params["delay"] + " " + l.Params["bw"] + "\n")
			if l.Node1 == "NewYork" && l.Node2 == "Washingto" {
				want := FibreDelay(GreatCircle(40.71427, -74.00597, 38.89511, -77.03637)).Round(time.Microsecond)
				if l.Params["delay"] != strconv.FormatInt(want.Microseconds(), 10)+"us" {
					t.Fatalf("NY-WDC delay %s, want %v", l.Params["delay"], want)
				}
			}
		}
		dumps = append(dumps, b.String())
		// Every default interface name fits the kernel's limit.
		plan, err := Resolve(tp, AddressOptions{})
		if err != nil {
			t.Fatalf("%s: resolve: %v", f, err)
		}
		for _, n := range plan.Nodes {
			for _, i := range n.Intfs {
				if len(i.Name) > MaxIntfName {
					t.Fatalf("interface %s too long", i.Name)
				}
			}
		}
	}
	if dumps[0] != dumps[1] {
		t.Fatalf("GraphML and GML give different maps:\n%s\n---\n%s", dumps[0], dumps[1])
	}
}

func TestLoadZooNoHosts(t *testing.T) {
	tp, _, err := LoadZoo("testdata/abilene.gml", ZooOptions{NoHosts: true})
	if err != nil {
		t.Fatal(err)
	}
	if tp.NodeCount() != 11 || len(tp.Links()) != 14 {
		t.Fatalf("%d nodes, %d links", tp.NodeCount(), len(tp.Links()))
	}
}

func TestLoadZooEdgeCases(t *testing.T) {
	const gml = `graph [
  node [ id 0 label "Zürich Hauptbahnhof" Latitude 47.3779 Longitude 8.5403 ]
  node [ id 1 label "Zürich Hauptbahnhof" Latitude 46.2044 Longitude 6.1432 ]
  node [ id 2 label "&#42;" ]
  node [ id 3 label "bus" hyperedge 1 ]
  edge [ source 0 target 1 LinkSpeed "1" LinkSpeedUnits "G" ]
  edge [ source 1 target 0 LinkSpeed "2" LinkSpeedUnits "G" ]
  edge [ source 1 target 1 ]
  edge [ source 0 target 2 ]
  edge [ source 0 target 3 ]
  edge [ source 2 target 3 ]
]`
	tp, fo, err := LoadZooData("edge.gml", []byte(gml), ZooOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(fo.Warnings, "\n")
	for _, want := range []string{"1 nodes have no coordinates (ids 2)", "1 self-loops dropped", "1 duplicate edges merged"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q lack %q", w, want)
		}
	}
	names := strings.Join(nodeNames(tp.Nodes()), " ")
	for _, want := range []string{"ZrichHaup", "ZrichHau2", "n2", "s1"} {
		if tp.Node(want) == nil {
			t.Errorf("no node %s in %s", want, names)
		}
	}
	if tp.Node("s1").Kind != KindSwitch {
		t.Error("the hyperedge is not a switch")
	}
	for _, l := range tp.Links() {
		if l.Node1 == "ZrichHaup" && l.Node2 == "ZrichHau2" && l.Params["bw"] != "3000" {
			t.Errorf("merged link bw %q, want 3000", l.Params["bw"])
		}
		if (l.Node1 == "n2" || l.Node2 == "n2") && l.Params["delay"] != "" {
			t.Errorf("a link to a node without coordinates has delay %s", l.Params["delay"])
		}
	}
	if _, err := Resolve(tp, AddressOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestLoadZooBadInput(t *testing.T) {
	for _, c := range []struct{ name, data, want string }{
		{"lat.gml", "graph [\n node [ id 0 Latitude 91 Longitude 0 ]\n]", `lat.gml:2: node "0": Latitude "91" is not a number of degrees from -90 to 90`},
		{"lon.gml", "graph [\n node [ id 0 Latitude 1 Longitude -180.5 ]\n]", `lon.gml:2: node "0": Longitude "-180.5" is not`},
		{"half.gml", "graph [\n\n node [ id 0 Latitude 1 ]\n]", `half.gml:3: node "0" has only one of Latitude and Longitude`},
		{"open.gml", "graph [\n node [ id 0\n", "open.gml:3: the file ends inside the list opened at line 2 (missing ])"},
		{"word.gml", "graph [\n node [ id zero ]\n]", `word.gml:2: id: "zero" is not a number`},
		{"str.gml", "graph [\n node [ id 0 label \"x ]\n]", "str.gml:2: a string that never ends"},
		{"dup.gml", "graph [\n node [ id 0 ]\n node [ id 0 ]\n]", `dup.gml:3: node id "0" is already used at line 2`},
		{"ref.gml", "graph [\n node [ id 0 ]\n edge [ source 0 target 7 ]\n]", `ref.gml:3: edge to undefined node "7"`},
		{"none.gml", "Creator \"x\"\n", "none.gml: no graph [ ... ]: not a GML map"},
		{"speed.gml", "graph [\n node [ id 0 ] node [ id 1 ]\n edge [ source 0 target 1 LinkSpeedRaw \"fast\" ]\n]", `speed.gml:3: LinkSpeedRaw "fast" is not a number of bit/s`},
		{"x.graphml", "<graphml><graph>\n<node id=\"0\">\n</graph></graphml>", "x.graphml:3: not well-formed GraphML: element <node> closed by </graph>"},
		{"nan.graphml", `<graphml><key id="a" for="node" attr.name="Latitude"/><key id="b" for="node" attr.name="Longitude"/><graph>
<node id="0"><data key="a">north</data><data key="b">1</data></node></graph></graphml>`, `nan.graphml:2: node "0": Latitude "north" is not a number`},
		{"key.graphml", "<graphml><graph>\n<node id=\"0\"><data key=\"zz\">1</data></node></graph></graphml>", `key.graphml:2: <data key="zz"> names no <key>`},
		{"dtd.graphml", "<!DOCTYPE x [<!ENTITY a \"b\">]><graphml/>", "dtd.graphml:1: GraphML maps have no <!DOCTYPE>"},
		{"empty.graphml", "", "empty.graphml: no <graphml> element"},
		{"nograph.graphml", "<graphml></graphml>", "nograph.graphml:1: the GraphML file has no <graph>"},
		{"noend.graphml", "<graphml><graph><node id=\"1\">", "noend.graphml:1: "},
		{"edge.graphml", "<graphml><graph>\n<node id=\"0\"/>\n<edge source=\"0\"/></graph></graphml>", "edge.graphml:3: an <edge> needs source and target"},
		{"two.graphml", "<graphml><graph></graph>\n<graph></graph></graphml>", "two.graphml:2: a second <graph>"},
	} {
		_, _, err := LoadZooData(c.name, []byte(c.data), ZooOptions{})
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !errors.Is(err, ErrBadFile) {
			t.Errorf("%s: %v is not ErrBadFile", c.name, err)
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", c.name, err, c.want)
		}
	}
}

func TestLoadZooLimits(t *testing.T) {
	var b strings.Builder
	b.WriteString("graph [\n")
	for i := 0; i < 50; i++ {
		b.WriteString(" node [ id " + strconv.Itoa(i) + " ]\n")
	}
	b.WriteString("]\n")
	_, _, err := LoadZooData("big.gml", []byte(b.String()), ZooOptions{Limits: Limits{MaxNodes: 10}})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("50 nodes with MaxNodes 10: %v", err)
	}
	deep := strings.Repeat("a [\n", 100) + strings.Repeat("]\n", 100)
	if _, _, err := LoadZooData("deep.gml", []byte(deep), ZooOptions{}); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("deep GML: %v", err)
	}
	deepXML := "<graphml><graph>" + strings.Repeat("<x>", 100) + strings.Repeat("</x>", 100) + "</graph></graphml>"
	if _, _, err := LoadZooData("deep.graphml", []byte(deepXML), ZooOptions{}); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("deep GraphML: %v", err)
	}
}
