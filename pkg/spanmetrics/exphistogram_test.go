package spanmetrics

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// The exponential histogram agrees with the OpenTelemetry SDK's on the
// same values: scale, zero count, offset and every bucket.
func TestExpHistogramMatchesSDK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for name, values := range map[string][]float64{
		"one value":      {0.0123},
		"powers of two":  {0.25, 0.5, 1, 2, 4, 1024},
		"latencies":      randomValues(r, 2000, func() float64 { return 0.0005 + r.ExpFloat64()*0.05 }),
		"wide range":     randomValues(r, 2000, func() float64 { return r.Float64() * 1e6 }),
		"zeros":          {0, 0, 3, 0, 17},
		"falling values": {100, 10, 1, 0.1, 0.01, 0.001, 0.0001},
	} {
		t.Run(name, func(t *testing.T) {
			reader := sdkmetric.NewManualReader()
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithView(sdkmetric.NewView(
				sdkmetric.Instrument{Name: "*"},
				sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: expMaxSize, MaxScale: expMaxScale}})))
			hist, err := mp.Meter("t").Float64Histogram("h")
			if err != nil {
				t.Fatal(err)
			}
			h := newExpHistogram()
			for _, v := range values {
				hist.Record(context.Background(), v)
				h.observe(v)
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			want := rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.ExponentialHistogram[float64]).DataPoints[0]
			got := h.dataPoint()
			if got.Scale != want.Scale || got.ZeroCount != want.ZeroCount || got.Count != want.Count {
				t.Fatalf("scale/zero/count %d/%d/%d, SDK %d/%d/%d", got.Scale, got.ZeroCount, got.Count, want.Scale, want.ZeroCount, want.Count)
			}
			gOff, gCounts := trim(got.PositiveBucket)
			wOff, wCounts := trim(want.PositiveBucket)
			if gOff != wOff || !slices.Equal(gCounts, wCounts) {
				t.Errorf("buckets from %d %v, SDK from %d %v", gOff, gCounts, wOff, wCounts)
			}
		})
	}
}

func randomValues(r *rand.Rand, n int, f func() float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f()
	}
	return out
}

// trim drops empty buckets at both ends.
func trim(b metricdata.ExponentialBucket) (int32, []uint64) {
	c := b.Counts
	off := b.Offset
	for len(c) > 0 && c[0] == 0 {
		c, off = c[1:], off+1
	}
	for len(c) > 0 && c[len(c)-1] == 0 {
		c = c[:len(c)-1]
	}
	return off, c
}
