package emulator

import (
	"bytes"
	"context"
	"encoding/csv"
	"strings"
	"testing"
	"time"
)

func TestGridSmall(t *testing.T) {
	o := DefaultGridOptions()
	o.Jitters = []time.Duration{time.Millisecond}
	o.HalfLives = []time.Duration{0, 21 * time.Millisecond}
	o.Rates = []uint64{1e8, 1e9}
	o.Replications = 3
	o.Duration = func(uint64) time.Duration { return 300 * time.Millisecond }
	cells, err := RunGrid(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(cells) != 4 {
		t.Fatalf("%d cells", len(cells))
	}
	for _, c := range cells {
		if c.Packets == 0 || c.ExtraDelayUs.CI95 < 0 {
			t.Errorf("cell %+v", c)
		}
		if c.HalfLife == 0 && c.Pass() {
			t.Errorf("uncorrelated cell passes: %+v", c.EmuMeanDevPct)
		}
		if c.HalfLife > 0 && !c.Pass() {
			t.Errorf("correlated cell fails: %+v %+v", c.EmuMeanDevPct, c.EmuJitDevPct)
		}
	}
	var b bytes.Buffer
	if err := WriteGridCSV(&b, cells); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("csv: %v, %d rows", err, len(rows))
	}
	b.Reset()
	if err := WriteGridSVG(&b, cells, "mean <dev>", func(c GridCell) Estimate { return c.EmuMeanDevPct }, 3); err != nil {
		t.Fatal(err)
	}
	if s := b.String(); !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "mean &lt;dev&gt;") || !strings.HasSuffix(s, "</svg>\n") {
		t.Fatalf("svg: %.200s", s)
	}
	if _, err := RunGrid(context.Background(), GridOptions{Replications: 1}); err == nil {
		t.Error("1 replication accepted")
	}
}
