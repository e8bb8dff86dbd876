package spanmetrics

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/weftdev/weft/pkg/spans"
)

// Scope is the instrumentation scope of every metric here.
var Scope = instrumentation.Scope{Name: "github.com/weftdev/weft/pkg/spanmetrics"}

// The metrics' names, units and descriptions: the HTTP semantic
// conventions' for RED, Tempo's for the service graph.
const (
	ServerDuration     = "http.server.request.duration"
	ClientDuration     = "http.client.request.duration"
	ServerRequestBody  = "http.server.request.body.size"
	ServerResponseBody = "http.server.response.body.size"
	ClientRequestBody  = "http.client.request.body.size"
	ClientResponseBody = "http.client.response.body.size"

	GraphRequests      = "traces_service_graph_request_total"
	GraphFailed        = "traces_service_graph_request_failed_total"
	GraphServerSeconds = "traces_service_graph_request_server_seconds"
	GraphClientSeconds = "traces_service_graph_request_client_seconds"
)

type instrument struct {
	name, unit, desc string
	kind             spans.Kind
	pick             func(*redSeries) *dist
}

var redInstruments = []instrument{
	{ServerDuration, "s", "Duration of HTTP server requests.", spans.KindServer, func(r *redSeries) *dist { return &r.duration }},
	{ClientDuration, "s", "Duration of HTTP client requests.", spans.KindClient, func(r *redSeries) *dist { return &r.duration }},
	{ServerRequestBody, "By", "Size of HTTP server request bodies.", spans.KindServer, func(r *redSeries) *dist { return r.reqBody }},
	{ServerResponseBody, "By", "Size of HTTP server response bodies.", spans.KindServer, func(r *redSeries) *dist { return r.respBody }},
	{ClientRequestBody, "By", "Size of HTTP client request bodies.", spans.KindClient, func(r *redSeries) *dist { return r.reqBody }},
	{ClientResponseBody, "By", "Size of HTTP client response bodies.", spans.KindClient, func(r *redSeries) *dist { return r.respBody }},
}

func (in instrument) bounds() []float64 {
	if in.unit == "s" {
		return DurationBounds
	}
	return SizeBounds
}

// CollectPrometheus returns the cumulative values with explicit buckets:
// the RED metrics of each service on its resource, then the service graph
// on Options.Self.
func (a *Aggregator) CollectPrometheus() []metricdata.ResourceMetrics {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	a.graph.sweep(now, &a.stats)
	return a.collect(form{now: now, temp: metricdata.CumulativeTemporality})
}

// CollectOTLP returns what OTLP is to be sent: cumulative values, or with
// Options.Delta what changed since its previous call (or New); explicit
// buckets, or with Options.Exponential exponential histograms.
func (a *Aggregator) CollectOTLP() []metricdata.ResourceMetrics {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	a.graph.sweep(now, &a.stats)
	f := form{now: now, temp: metricdata.CumulativeTemporality, exponential: a.opts.Exponential}
	if a.opts.Delta {
		f.temp, f.delta, f.since = metricdata.DeltaTemporality, true, a.lastDelta
		a.lastDelta = now
	}
	return a.collect(f)
}

// form is how a collection reports: its time, temporality (for deltas,
// since when) and histogram kind.
type form struct {
	now, since  time.Time
	temp        metricdata.Temporality
	delta       bool
	exponential bool
}

func (f form) start(created time.Time) time.Time {
	if f.delta && f.since.After(created) {
		return f.since
	}
	return created
}

// points gathers one histogram instrument's points in the form's kind.
type points struct {
	f        form
	explicit []metricdata.HistogramDataPoint[float64]
	exp      []metricdata.ExponentialHistogramDataPoint[float64]
}

func (p *points) add(d *dist, bounds []float64, attrs attribute.Set, created time.Time) {
	if d == nil || d.explicit.count == 0 {
		return
	}
	start := p.f.start(created)
	if p.f.exponential {
		dp := d.exp.dataPoint()
		dp.Attributes, dp.StartTime, dp.Time = attrs, start, p.f.now
		p.exp = append(p.exp, dp)
		return
	}
	p.explicit = append(p.explicit, dataPoint(&d.explicit, bounds, attrs, start, p.f.now))
}

func (p *points) metric(name, unit, desc string) (metricdata.Metrics, bool) {
	m := metricdata.Metrics{Name: name, Unit: unit, Description: desc}
	if p.f.exponential {
		m.Data = metricdata.ExponentialHistogram[float64]{DataPoints: p.exp, Temporality: p.f.temp}
		return m, len(p.exp) > 0
	}
	m.Data = metricdata.Histogram[float64]{DataPoints: p.explicit, Temporality: p.f.temp}
	return m, len(p.explicit) > 0
}

func (a *Aggregator) collect(f form) []metricdata.ResourceMetrics {
	var out []metricdata.ResourceMetrics
	for _, svc := range a.services {
		var ms []metricdata.Metrics
		for _, in := range redInstruments {
			pts := points{f: f}
			for k, r := range svc.series {
				if k.kind != in.kind {
					continue
				}
				created := r.start
				if f.delta {
					r = r.since
				}
				pts.add(in.pick(r), in.bounds(), redAttrs(k), created)
			}
			if m, ok := pts.metric(in.name, in.unit, in.desc); ok {
				ms = append(ms, m)
			}
		}
		if f.delta {
			for _, r := range svc.series {
				r.since.reset()
			}
		}
		if len(ms) > 0 {
			out = append(out, metricdata.ResourceMetrics{Resource: svc.res, ScopeMetrics: []metricdata.ScopeMetrics{{Scope: Scope, Metrics: ms}}})
		}
	}
	if ms := a.collectGraph(f); len(ms) > 0 {
		out = append(out, metricdata.ResourceMetrics{Resource: a.opts.Self, ScopeMetrics: []metricdata.ScopeMetrics{{Scope: Scope, Metrics: ms}}})
	}
	return out
}

func (a *Aggregator) collectGraph(f form) []metricdata.Metrics {
	var total, failed []metricdata.DataPoint[int64]
	srv, cl := points{f: f}, points{f: f}
	for k, e := range a.graph.edges {
		created := e.start
		if f.delta {
			e = e.since
		}
		if e.total == 0 {
			continue
		}
		attrs := edgeAttrs(k)
		start := f.start(created)
		total = append(total, metricdata.DataPoint[int64]{Attributes: attrs, StartTime: start, Time: f.now, Value: int64(e.total)})
		failed = append(failed, metricdata.DataPoint[int64]{Attributes: attrs, StartTime: start, Time: f.now, Value: int64(e.failed)})
		srv.add(&e.serverSeconds, DurationBounds, attrs, created)
		cl.add(&e.clientSeconds, DurationBounds, attrs, created)
		if f.delta {
			e.reset()
		}
	}
	if len(total) == 0 {
		return nil
	}
	ms := []metricdata.Metrics{
		{Name: GraphRequests, Description: "Requests between two services.", Unit: "1",
			Data: metricdata.Sum[int64]{DataPoints: total, Temporality: f.temp, IsMonotonic: true}},
		{Name: GraphFailed, Description: "Failed requests between two services.", Unit: "1",
			Data: metricdata.Sum[int64]{DataPoints: failed, Temporality: f.temp, IsMonotonic: true}},
	}
	if m, ok := srv.metric(GraphServerSeconds, "s", "Duration of requests between two services, as the server measured it."); ok {
		ms = append(ms, m)
	}
	if m, ok := cl.metric(GraphClientSeconds, "s", "Duration of requests between two services, as the client measured it."); ok {
		ms = append(ms, m)
	}
	return ms
}

func dataPoint(h *histogram, bounds []float64, attrs attribute.Set, start, now time.Time) metricdata.HistogramDataPoint[float64] {
	return metricdata.HistogramDataPoint[float64]{
		Attributes:   attrs,
		StartTime:    start,
		Time:         now,
		Count:        h.count,
		Bounds:       bounds,
		BucketCounts: append([]uint64(nil), h.counts...),
		Min:          metricdata.NewExtrema(h.min),
		Max:          metricdata.NewExtrema(h.max),
		Sum:          h.sum,
	}
}

// OverflowKey marks the series of requests whose route was dropped
// (OpenTelemetry's name for a cardinality limit's overflow).
const OverflowKey = attribute.Key("otel.metric.overflow")

func redAttrs(k redKey) attribute.Set {
	kv := make([]attribute.KeyValue, 0, 9)
	kv = append(kv, attribute.String("url.scheme", k.scheme), attribute.String("network.protocol.name", "http"))
	if k.method != "" {
		kv = append(kv, attribute.String("http.request.method", k.method))
	}
	if k.status > 0 {
		kv = append(kv, attribute.Int("http.response.status_code", k.status))
	}
	if k.proto != "" {
		kv = append(kv, attribute.String("network.protocol.version", k.proto))
	}
	if k.errorType != "" {
		kv = append(kv, attribute.String("error.type", k.errorType))
	}
	routeKey := attribute.Key("http.route")
	if k.kind == spans.KindClient {
		routeKey = "url.template"
		if k.address != "" {
			kv = append(kv, attribute.String("server.address", k.address), attribute.Int("server.port", k.port))
		}
	}
	switch {
	case k.overflow:
		kv = append(kv, OverflowKey.Bool(true))
	case k.route != "":
		kv = append(kv, routeKey.String(k.route))
	}
	return attribute.NewSet(kv...)
}

func edgeAttrs(k edgeKey) attribute.Set {
	kv := []attribute.KeyValue{attribute.String("client", k.client), attribute.String("server", k.server)}
	if k.connType != "" {
		kv = append(kv, attribute.String("connection_type", k.connType))
	}
	return attribute.NewSet(kv...)
}
