package emulator

import (
	"math"
	"math/bits"
)

// Histogram records non-negative nanosecond values in log-linear buckets:
// exact below 128 ns, then 64 buckets per power of two (≤ 1.6 % relative
// error), up to 2^40 ns (18 minutes). Recording is a few instructions and
// never allocates, so it can sit on the per-packet path.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    float64
	sumSq  float64
	min    int64
	max    int64
}

const (
	histSubBits = 7
	histSub     = 1 << histSubBits // exact range
	histHalf    = histSub / 2
	histMaxExp  = 40 - histSubBits + 1
	histBuckets = histSub + histMaxExp*histHalf
)

func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits
	if shift > histMaxExp {
		return histBuckets - 1
	}
	return histSub + (shift-1)*histHalf + int(v>>uint(shift)) - histHalf
}

// histLower is the smallest value that falls into bucket i.
func histLower(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	j := i - histSub
	shift := j/histHalf + 1
	return uint64(j%histHalf+histHalf) << uint(shift)
}

// Record adds one value; negative values count as 0.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		v = 0
	}
	h.counts[histIndex(uint64(v))]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
	h.n++
	f := float64(v)
	h.sum += f
	h.sumSq += f * f
}

// Count is the number of recorded values.
func (h *Histogram) Count() uint64 { return h.n }

// Mean in ns (0 when empty).
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Std is the population standard deviation in ns.
func (h *Histogram) Std() float64 {
	if h.n == 0 {
		return 0
	}
	m := h.sum / float64(h.n)
	return math.Sqrt(max(0, h.sumSq/float64(h.n)-m*m))
}

// Min and Max are exact.
func (h *Histogram) Min() int64 { return h.min }
func (h *Histogram) Max() int64 { return h.max }

// Quantile returns the value below which a fraction q of the records lie,
// interpolated inside the bucket and clamped to the exact min and max.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := q * float64(h.n)
	var cum float64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		if cum+float64(c) >= rank {
			lo := float64(histLower(i))
			hi := lo + 1
			if i+1 < histBuckets {
				hi = float64(histLower(i + 1))
			}
			v := int64(lo + (hi-lo)*(rank-cum)/float64(c))
			return min(max(v, h.min), h.max)
		}
		cum += float64(c)
	}
	return h.max
}

// Reset clears all records.
func (h *Histogram) Reset() { *h = Histogram{} }
