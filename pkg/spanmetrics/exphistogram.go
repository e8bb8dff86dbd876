package spanmetrics

import (
	"math"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The OpenTelemetry SDK's defaults for base-2 exponential histograms.
const (
	expMaxSize  = 160
	expMaxScale = 20
)

// expHistogram is a base-2 exponential histogram of values ≥ 0, as the
// OpenTelemetry data model defines it: at scale s, bucket i holds the
// values in (2^(i·2^-s), 2^((i+1)·2^-s)]; when the values span more than
// expMaxSize buckets, the scale drops, merging neighbours, so it adapts to
// whatever range a service's latencies have.
type expHistogram struct {
	scale    int32
	zero     uint64
	offset   int32    // the index of counts[0]
	counts   []uint64 // dense from offset
	count    uint64
	sum      float64
	min, max float64
}

func newExpHistogram() *expHistogram {
	return &expHistogram{scale: expMaxScale, min: math.Inf(1), max: math.Inf(-1)}
}

func (h *expHistogram) observe(v float64) {
	h.count++
	h.sum += v
	h.min = math.Min(h.min, v)
	h.max = math.Max(h.max, v)
	if v <= 0 {
		h.zero++
		return
	}
	idx := expIndex(v, h.scale)
	if len(h.counts) == 0 {
		h.offset = idx
		h.counts = append(h.counts, 1)
		return
	}
	low, high := min(idx, h.offset), max(idx, h.offset+int32(len(h.counts))-1)
	if change := scaleChange(low, high); change > 0 {
		h.downscale(change)
		idx >>= change
	}
	switch {
	case idx < h.offset:
		grown := make([]uint64, int(h.offset-idx)+len(h.counts))
		copy(grown[h.offset-idx:], h.counts)
		h.counts, h.offset = grown, idx
	case int(idx-h.offset) >= len(h.counts):
		h.counts = append(h.counts, make([]uint64, int(idx-h.offset)+1-len(h.counts))...)
	}
	h.counts[idx-h.offset]++
}

// scaleChange is by how much the scale must drop for indexes low..high to
// fit expMaxSize buckets.
func scaleChange(low, high int32) int32 {
	var c int32
	for high-low >= expMaxSize {
		low >>= 1
		high >>= 1
		c++
	}
	return c
}

// downscale lowers the scale by change, merging each 2^change neighbours.
func (h *expHistogram) downscale(change int32) {
	h.scale -= change
	newOffset := h.offset >> change
	merged := make([]uint64, int((h.offset+int32(len(h.counts))-1)>>change-newOffset)+1)
	for i, c := range h.counts {
		merged[(h.offset+int32(i))>>change-newOffset] += c
	}
	h.counts, h.offset = merged, newOffset
}

// expIndex maps v > 0 to its bucket at scale, ceil(log2(v)·2^scale) - 1:
// the exponent exactly (a power of two is the upper bound of its bucket),
// the fraction by logarithm, as the data model's specification advises.
func expIndex(v float64, scale int32) int32 {
	frac, exp := math.Frexp(v) // v = frac · 2^exp, frac in [0.5, 1)
	if scale <= 0 {
		idx := exp - 1
		if frac == 0.5 {
			idx--
		}
		return int32(idx) >> -scale
	}
	// log2(frac) is in [-1, 0): truncating rounds it up.
	return int32(exp)<<scale + int32(math.Log(frac)*math.Ldexp(math.Log2E, int(scale))) - 1
}

func (h *expHistogram) reset() {
	*h = *newExpHistogram()
}

func (h *expHistogram) dataPoint() metricdata.ExponentialHistogramDataPoint[float64] {
	return metricdata.ExponentialHistogramDataPoint[float64]{
		Count:          h.count,
		Sum:            h.sum,
		Min:            metricdata.NewExtrema(h.min),
		Max:            metricdata.NewExtrema(h.max),
		Scale:          h.scale,
		ZeroCount:      h.zero,
		PositiveBucket: metricdata.ExponentialBucket{Offset: h.offset, Counts: append([]uint64(nil), h.counts...)},
	}
}
