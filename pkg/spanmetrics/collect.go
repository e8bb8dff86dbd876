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
	pick             func(*redSeries) *histogram
}

var redInstruments = []instrument{
	{ServerDuration, "s", "Duration of HTTP server requests.", spans.KindServer, func(r *redSeries) *histogram { return &r.duration }},
	{ClientDuration, "s", "Duration of HTTP client requests.", spans.KindClient, func(r *redSeries) *histogram { return &r.duration }},
	{ServerRequestBody, "By", "Size of HTTP server request bodies.", spans.KindServer, func(r *redSeries) *histogram { return r.reqBody }},
	{ServerResponseBody, "By", "Size of HTTP server response bodies.", spans.KindServer, func(r *redSeries) *histogram { return r.respBody }},
	{ClientRequestBody, "By", "Size of HTTP client request bodies.", spans.KindClient, func(r *redSeries) *histogram { return r.reqBody }},
	{ClientResponseBody, "By", "Size of HTTP client response bodies.", spans.KindClient, func(r *redSeries) *histogram { return r.respBody }},
}

// Collect returns the cumulative values: the RED metrics of each service
// on its resource, then the service graph on Options.Self.
func (a *Aggregator) Collect() []metricdata.ResourceMetrics {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	a.graph.sweep(now, &a.stats)
	return a.collect(now, metricdata.CumulativeTemporality, false)
}

// CollectDelta returns what changed since the previous CollectDelta (or
// New) and starts the next interval. It needs Options.Delta.
func (a *Aggregator) CollectDelta() []metricdata.ResourceMetrics {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.opts.Now()
	a.graph.sweep(now, &a.stats)
	out := a.collect(now, metricdata.DeltaTemporality, true)
	a.lastDelta = now
	return out
}

func (a *Aggregator) collect(now time.Time, temp metricdata.Temporality, delta bool) []metricdata.ResourceMetrics {
	var out []metricdata.ResourceMetrics
	for _, svc := range a.services {
		var ms []metricdata.Metrics
		for _, in := range redInstruments {
			var dps []metricdata.HistogramDataPoint[float64]
			for k, r := range svc.series {
				if k.kind != in.kind {
					continue
				}
				start := r.start
				if delta {
					r, start = r.since, later(start, a.lastDelta)
				}
				if h := in.pick(r); h != nil && h.count > 0 {
					dps = append(dps, dataPoint(h, in.boundsFor(), redAttrs(k), start, now))
				}
			}
			if len(dps) > 0 {
				ms = append(ms, metricdata.Metrics{Name: in.name, Unit: in.unit, Description: in.desc,
					Data: metricdata.Histogram[float64]{DataPoints: dps, Temporality: temp}})
			}
		}
		if delta {
			for _, r := range svc.series {
				r.since.reset()
			}
		}
		if len(ms) > 0 {
			out = append(out, metricdata.ResourceMetrics{Resource: svc.res, ScopeMetrics: []metricdata.ScopeMetrics{{Scope: Scope, Metrics: ms}}})
		}
	}
	if ms := a.collectGraph(now, temp, delta); len(ms) > 0 {
		out = append(out, metricdata.ResourceMetrics{Resource: a.opts.Self, ScopeMetrics: []metricdata.ScopeMetrics{{Scope: Scope, Metrics: ms}}})
	}
	return out
}

func (a *Aggregator) collectGraph(now time.Time, temp metricdata.Temporality, delta bool) []metricdata.Metrics {
	var total, failed []metricdata.DataPoint[int64]
	var srv, cl []metricdata.HistogramDataPoint[float64]
	for k, e := range a.graph.edges {
		start := e.start
		if delta {
			e, start = e.since, later(start, a.lastDelta)
		}
		if e.total == 0 {
			continue
		}
		attrs := edgeAttrs(k)
		total = append(total, metricdata.DataPoint[int64]{Attributes: attrs, StartTime: start, Time: now, Value: int64(e.total)})
		failed = append(failed, metricdata.DataPoint[int64]{Attributes: attrs, StartTime: start, Time: now, Value: int64(e.failed)})
		if e.serverSeconds.count > 0 {
			srv = append(srv, dataPoint(&e.serverSeconds, DurationBounds, attrs, start, now))
		}
		if e.clientSeconds.count > 0 {
			cl = append(cl, dataPoint(&e.clientSeconds, DurationBounds, attrs, start, now))
		}
		if delta {
			*e = *newEdge(e.start, false)
		}
	}
	if len(total) == 0 {
		return nil
	}
	ms := []metricdata.Metrics{
		{Name: GraphRequests, Description: "Requests between two services.", Unit: "1",
			Data: metricdata.Sum[int64]{DataPoints: total, Temporality: temp, IsMonotonic: true}},
		{Name: GraphFailed, Description: "Failed requests between two services.", Unit: "1",
			Data: metricdata.Sum[int64]{DataPoints: failed, Temporality: temp, IsMonotonic: true}},
	}
	if len(srv) > 0 {
		ms = append(ms, metricdata.Metrics{Name: GraphServerSeconds, Unit: "s", Description: "Duration of requests between two services, as the server measured it.",
			Data: metricdata.Histogram[float64]{DataPoints: srv, Temporality: temp}})
	}
	if len(cl) > 0 {
		ms = append(ms, metricdata.Metrics{Name: GraphClientSeconds, Unit: "s", Description: "Duration of requests between two services, as the client measured it.",
			Data: metricdata.Histogram[float64]{DataPoints: cl, Temporality: temp}})
	}
	return ms
}

func (in instrument) boundsFor() []float64 {
	if in.unit == "s" {
		return DurationBounds
	}
	return SizeBounds
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
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
	kv = append(kv, attribute.String("url.scheme", "http"), attribute.String("network.protocol.name", "http"))
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
