package emulator

import "testing"

func TestHistogramBins(t *testing.T) {
	var h Histogram
	for _, v := range []int64{5, 5, 1000, 1_000_000} {
		h.Record(v)
	}
	bins := h.Bins()
	if len(bins) != 3 {
		t.Fatalf("bins = %+v, want 3 non-empty", bins)
	}
	var n uint64
	for i, b := range bins {
		n += b.Count
		if b.Lower >= b.Upper || (i > 0 && b.Lower < bins[i-1].Upper) {
			t.Errorf("bin %d = %+v: not increasing", i, b)
		}
	}
	if n != 4 || bins[0].Count != 2 || bins[0].Lower != 5 {
		t.Errorf("bins = %+v", bins)
	}
	for _, v := range []int64{1000, 1_000_000} {
		found := false
		for _, b := range bins {
			found = found || (v >= b.Lower && v < b.Upper)
		}
		if !found {
			t.Errorf("%d is in no bin of %+v", v, bins)
		}
	}
}
