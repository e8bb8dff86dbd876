package metrics

import (
	"bytes"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
)

func TestOTelMetricsAsPrometheus(t *testing.T) {
	res := resource.NewSchemaless(attribute.String("service.name", "shop"), attribute.String("host.name", "h"))
	start := time.Unix(1000, 0)
	src := func() []metricdata.ResourceMetrics {
		return []metricdata.ResourceMetrics{{Resource: res, ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{
			{Name: "http.server.request.duration", Unit: "s", Description: "d", Data: metricdata.Histogram[float64]{
				Temporality: metricdata.CumulativeTemporality,
				DataPoints: []metricdata.HistogramDataPoint[float64]{{
					Attributes: attribute.NewSet(attribute.String("http.route", "/a"), attribute.Int("http.response.status_code", 200)),
					StartTime:  start, Time: start.Add(time.Second),
					Bounds: []float64{0.1, 1}, BucketCounts: []uint64{2, 3, 1}, Count: 6, Sum: 4.5,
				}},
			}},
			{Name: "traces_service_graph_request_total", Unit: "1", Data: metricdata.Sum[int64]{
				IsMonotonic: true, Temporality: metricdata.CumulativeTemporality,
				DataPoints: []metricdata.DataPoint[int64]{{Attributes: attribute.NewSet(attribute.String("client", "a"), attribute.String("server", "b")), Value: 7}},
			}},
		}}}}}
	}
	var r Registry
	r.AddOTel(src, func(res *resource.Resource) []attribute.KeyValue {
		v, _ := res.Set().Value("service.name")
		return []attribute.KeyValue{attribute.String("service.name", v.AsString())}
	})
	var buf bytes.Buffer
	if err := r.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	mfs, err := ParseText(&buf)
	if err != nil {
		t.Fatal(err)
	}
	h := mfs["http_server_request_duration_seconds"]
	if h == nil || h.GetType() != dto.MetricType_HISTOGRAM || len(h.GetMetric()) != 1 {
		t.Fatalf("histogram family: %v", h)
	}
	m := h.GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["service_name"] != "shop" || labels["http_route"] != "/a" || labels["http_response_status_code"] != "200" || len(labels) != 3 {
		t.Errorf("labels %v", labels)
	}
	hist := m.GetHistogram()
	if hist.GetSampleCount() != 6 || hist.GetSampleSum() != 4.5 {
		t.Errorf("count %d sum %v", hist.GetSampleCount(), hist.GetSampleSum())
	}
	// Prometheus buckets are cumulative: le=0.1 has 2, le=1 has 5.
	want := map[float64]uint64{0.1: 2, 1: 5}
	for _, b := range hist.GetBucket() {
		if w, ok := want[b.GetUpperBound()]; ok && b.GetCumulativeCount() != w {
			t.Errorf("le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), w)
		}
	}
	c := mfs["traces_service_graph_request_total"]
	if c == nil || c.GetType() != dto.MetricType_COUNTER || c.GetMetric()[0].GetCounter().GetValue() != 7 {
		t.Fatalf("counter family: %v", c)
	}
}
