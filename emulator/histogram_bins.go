package emulator

// HistogramBin is one non-empty bucket of a Histogram: Count values in
// [Lower, Upper) nanoseconds.
type HistogramBin struct {
	Lower, Upper int64
	Count        uint64
}

// Bins returns the histogram's non-empty buckets in increasing order, so a
// reader (the live view's delay histogram) can draw the distribution itself
// rather than only its percentiles.
func (h *Histogram) Bins() []HistogramBin {
	var out []HistogramBin
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		lo := int64(histLower(i))
		hi := lo + 1
		if i+1 < histBuckets {
			hi = int64(histLower(i + 1))
		}
		out = append(out, HistogramBin{Lower: lo, Upper: hi, Count: c})
	}
	return out
}

// DelayHistogram returns a copy of one direction's applied-delay histogram
// (what Stats summarises as Emulator.Delay).
func (f *Forwarder) DelayHistogram(dir Direction) Histogram {
	d := f.dirs[dir&1]
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.emu.DelayHistogram()
}
