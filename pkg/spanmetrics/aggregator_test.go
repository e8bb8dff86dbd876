package spanmetrics

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/weftdev/weft/pkg/spans"
)

// fakeResolver names pids by names, one resource per pid (cached, as
// procinfo's are), with a process.pid that metrics must ignore.
type fakeResolver struct {
	names map[uint32]string
	res   map[uint32]*resource.Resource
}

func (f fakeResolver) Resolve(pid uint32) (*resource.Resource, string) {
	name := f.names[pid]
	if r, ok := f.res[pid]; ok {
		return r, name
	}
	r := resource.NewSchemaless(attribute.String("service.name", name), attribute.Int("process.pid", int(pid)), attribute.String("host.name", "h"))
	f.res[pid] = r
	return r, name
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func span(kind spans.Kind, pid uint32, method, route string, status int, d time.Duration) *spans.Span {
	return &spans.Span{Kind: kind, PID: pid, Method: method, Route: route, Path: route, StatusCode: status, Proto: "1.1",
		Start: t0, End: t0.Add(d), RequestBodySize: -1, ResponseBodySize: -1}
}

func newTestAggregator(opts Options, names map[uint32]string) (*Aggregator, *clock) {
	c := &clock{t: t0}
	opts.Now = c.now
	return New(opts, fakeResolver{names, map[uint32]*resource.Resource{}}), c
}

// histogramPoints returns name's points in the resource of service, by
// their attributes' encoding.
func histogramPoints(t *testing.T, rms []metricdata.ResourceMetrics, service, name string) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	out := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, rm := range rms {
		if v, _ := rm.Resource.Set().Value("service.name"); v.AsString() != service {
			continue
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if m.Name != name {
					continue
				}
				for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					out[dp.Attributes.Encoded(attribute.DefaultEncoder())] = dp
				}
			}
		}
	}
	return out
}

func TestREDCountsErrorsAndBuckets(t *testing.T) {
	a, _ := newTestAggregator(Options{RED: true}, map[uint32]string{1: "shop", 2: "shop"})
	// Two processes of one service share series; 10 % 500s; two delays.
	for i := range 200 {
		status, d := 200, 10*time.Millisecond
		if i%10 == 0 {
			status = 500
		}
		if i%2 == 1 {
			d = 50 * time.Millisecond
		}
		a.Observe(span(spans.KindServer, uint32(1+i%2), "GET", "/items/{id}", status, d))
	}
	pts := histogramPoints(t, a.CollectPrometheus(), "shop", ServerDuration)
	if len(pts) != 2 {
		t.Fatalf("%d series, want 2 (200 and 500): %v", len(pts), pts)
	}
	var ok, failed metricdata.HistogramDataPoint[float64]
	for k, dp := range pts {
		if v, _ := dp.Attributes.Value("http.response.status_code"); v.AsInt64() == 500 {
			failed = dp
			if e, _ := dp.Attributes.Value("error.type"); e.AsString() != "500" {
				t.Errorf("500 series without error.type 500: %s", k)
			}
		} else {
			ok = dp
		}
		if r, _ := dp.Attributes.Value("http.route"); r.AsString() != "/items/{id}" {
			t.Errorf("route %q", r.AsString())
		}
	}
	// i%10==0 are even: all 500s took 10 ms. 10 ms falls in (0.005, 0.01],
	// 50 ms in (0.025, 0.05].
	if failed.Count != 20 || failed.BucketCounts[1] != 20 {
		t.Errorf("500s: count %d buckets %v", failed.Count, failed.BucketCounts)
	}
	if ok.Count != 180 || ok.BucketCounts[1] != 80 || ok.BucketCounts[3] != 100 {
		t.Errorf("200s: count %d buckets %v", ok.Count, ok.BucketCounts)
	}
	if got := a.Stats().ServicesTracked.Load(); got != 1 {
		t.Errorf("%d services, want 1", got)
	}
}

func TestRouteLimitOverflows(t *testing.T) {
	a, _ := newTestAggregator(Options{RED: true, RouteLimit: 100}, map[uint32]string{1: "api"})
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		a.Observe(span(spans.KindServer, 1, "GET", fmt.Sprintf("/r/%c%c%c%c", 'a'+r.IntN(26), 'a'+r.IntN(26), 'a'+r.IntN(26), 'a'+r.IntN(26)), 200, time.Millisecond))
	}
	pts := histogramPoints(t, a.CollectPrometheus(), "api", ServerDuration)
	var routed, overflow uint64
	for _, dp := range pts {
		if v, ok := dp.Attributes.Value(OverflowKey); ok && v.AsBool() {
			overflow += dp.Count
			if _, has := dp.Attributes.Value("http.route"); has {
				t.Error("overflow series with a route")
			}
			continue
		}
		routed += dp.Count
	}
	if len(pts) != 101 {
		t.Errorf("%d series, want 100 routes and the overflow one", len(pts))
	}
	if routed+overflow != 10000 || overflow != a.Stats().RoutesOverflow.Load() || overflow == 0 {
		t.Errorf("routed %d overflow %d counted %d", routed, overflow, a.Stats().RoutesOverflow.Load())
	}
}

func TestClientSeriesCarryServerAddressNotClientPort(t *testing.T) {
	a, _ := newTestAggregator(Options{RED: true}, map[uint32]string{1: "front"})
	for port := range uint16(50) {
		s := span(spans.KindClient, 1, "BREW", "/pot", 418, time.Millisecond)
		s.Remote = netip.MustParseAddrPort("10.0.0.2:8080")
		s.Local = netip.AddrPortFrom(netip.MustParseAddr("10.0.0.1"), 40000+port)
		s.ResponseBodySize = 100
		a.Observe(s)
	}
	pts := histogramPoints(t, a.CollectPrometheus(), "front", ClientDuration)
	if len(pts) != 1 {
		t.Fatalf("%d series, want 1", len(pts))
	}
	for _, dp := range pts {
		want := map[attribute.Key]string{"server.address": "10.0.0.2", "http.request.method": "_OTHER", "url.template": "/pot", "error.type": "418"}
		for k, v := range want {
			if got, _ := dp.Attributes.Value(k); got.Emit() != v {
				t.Errorf("%s = %q, want %q", k, got.Emit(), v)
			}
		}
		if p, _ := dp.Attributes.Value("server.port"); p.AsInt64() != 8080 {
			t.Errorf("server.port %d", p.AsInt64())
		}
	}
	body := histogramPoints(t, a.CollectPrometheus(), "front", ClientResponseBody)
	if len(body) != 1 {
		t.Fatalf("body series %d", len(body))
	}
	for _, dp := range body {
		if dp.Count != 50 || dp.BucketCounts[2] != 50 { // 100 B in (64, 256]
			t.Errorf("body %d %v", dp.Count, dp.BucketCounts)
		}
	}
	if got := histogramPoints(t, a.CollectPrometheus(), "front", ClientRequestBody); len(got) != 0 {
		t.Errorf("unknown request sizes recorded: %v", got)
	}
}

func TestDeltaStartsEachIntervalEmpty(t *testing.T) {
	a, c := newTestAggregator(Options{RED: true, Delta: true}, map[uint32]string{1: "svc"})
	for range 3 {
		a.Observe(span(spans.KindServer, 1, "GET", "/", 200, time.Millisecond))
	}
	c.t = t0.Add(time.Minute)
	first := histogramPoints(t, a.CollectOTLP(), "svc", ServerDuration)
	for range 2 {
		a.Observe(span(spans.KindServer, 1, "GET", "/", 200, time.Millisecond))
	}
	c.t = t0.Add(2 * time.Minute)
	second := histogramPoints(t, a.CollectOTLP(), "svc", ServerDuration)
	third := histogramPoints(t, a.CollectOTLP(), "svc", ServerDuration)
	cum := histogramPoints(t, a.CollectPrometheus(), "svc", ServerDuration)
	count := func(m map[string]metricdata.HistogramDataPoint[float64]) (n uint64, start time.Time) {
		for _, dp := range m {
			n, start = dp.Count, dp.StartTime
		}
		return
	}
	if n, start := count(first); n != 3 || !start.Equal(t0) {
		t.Errorf("first interval %d from %v", n, start)
	}
	if n, start := count(second); n != 2 || !start.Equal(t0.Add(time.Minute)) {
		t.Errorf("second interval %d from %v", n, start)
	}
	if len(third) != 0 {
		t.Errorf("an interval with no requests has points: %v", third)
	}
	if n, _ := count(cum); n != 5 {
		t.Errorf("cumulative %d", n)
	}
}

func TestOTLPExponentialPrometheusExplicit(t *testing.T) {
	a, _ := newTestAggregator(Options{RED: true, ServiceGraph: true, Exponential: true}, map[uint32]string{1: "svc"})
	for _, ms := range []int{1, 2, 4, 300} {
		a.Observe(span(spans.KindServer, 1, "GET", "/", 200, time.Duration(ms)*time.Millisecond))
	}
	var exp metricdata.ExponentialHistogramDataPoint[float64]
	for _, rm := range a.CollectOTLP() {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.ExponentialHistogram[float64]:
					if m.Name == ServerDuration {
						exp = d.DataPoints[0]
					}
				case metricdata.Histogram[float64]:
					t.Errorf("%s: explicit over OTLP", m.Name)
				}
			}
		}
	}
	var sum uint64
	for _, c := range exp.PositiveBucket.Counts {
		sum += c
	}
	if exp.Count != 4 || sum != 4 || exp.Scale > expMaxScale {
		t.Errorf("exponential point %+v", exp)
	}
	pts := histogramPoints(t, a.CollectPrometheus(), "svc", ServerDuration)
	for _, dp := range pts {
		if dp.Count != 4 || dp.BucketCounts[0] != 3 {
			t.Errorf("explicit point %d %v", dp.Count, dp.BucketCounts)
		}
	}
	if len(pts) != 1 {
		t.Errorf("%d explicit points", len(pts))
	}
}
