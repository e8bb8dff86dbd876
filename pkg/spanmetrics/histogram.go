package spanmetrics

import (
	"math"
	"sort"
)

// DurationBounds are the explicit bucket bounds, in seconds, that the HTTP
// semantic conventions advise for request durations.
var DurationBounds = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// SizeBounds are the bucket bounds, in bytes, of body sizes: powers of 4
// from 64 B to 16 MiB, with 0 for empty bodies.
var SizeBounds = []float64{0, 64, 256, 1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20}

// histogram is an explicit-bucket histogram: counts[i] counts values in
// (bounds[i-1], bounds[i]], the last one values above every bound, as
// OpenTelemetry and Prometheus both define them.
type histogram struct {
	counts   []uint64
	count    uint64
	sum      float64
	min, max float64
}

func newHistogram(bounds []float64) histogram {
	return histogram{counts: make([]uint64, len(bounds)+1), min: math.Inf(1), max: math.Inf(-1)}
}

func (h *histogram) observe(bounds []float64, v float64) {
	h.counts[sort.SearchFloat64s(bounds, v)]++
	h.count++
	h.sum += v
	h.min = math.Min(h.min, v)
	h.max = math.Max(h.max, v)
}

// reset empties h, keeping its buckets' memory.
func (h *histogram) reset() {
	clear(h.counts)
	h.count, h.sum, h.min, h.max = 0, 0, math.Inf(1), math.Inf(-1)
}

// dist is one distribution: an explicit-bucket histogram always (the
// Prometheus text format takes only those) and, when OTLP asks for them,
// an exponential one beside it.
type dist struct {
	explicit histogram
	exp      *expHistogram
}

func newDist(bounds []float64, exponential bool) dist {
	d := dist{explicit: newHistogram(bounds)}
	if exponential {
		d.exp = newExpHistogram()
	}
	return d
}

func (d *dist) observe(bounds []float64, v float64) {
	d.explicit.observe(bounds, v)
	if d.exp != nil {
		d.exp.observe(v)
	}
}

func (d *dist) reset() {
	d.explicit.reset()
	if d.exp != nil {
		d.exp.reset()
	}
}
