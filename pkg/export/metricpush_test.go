package export

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/protobuf/proto"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// twoServices is a collection of one counter point on each of two
// resources.
func twoServices() []metricdata.ResourceMetrics {
	var out []metricdata.ResourceMetrics
	for i, name := range []string{"a", "b"} {
		out = append(out, metricdata.ResourceMetrics{
			Resource: resource.NewSchemaless(attribute.String("service.name", name)),
			ScopeMetrics: []metricdata.ScopeMetrics{{Metrics: []metricdata.Metrics{{
				Name: "requests", Unit: "1",
				Data: metricdata.Sum[int64]{IsMonotonic: true, Temporality: metricdata.CumulativeTemporality,
					DataPoints: []metricdata.DataPoint[int64]{{Value: int64(i + 1), Time: time.Unix(100, 0)}}},
			}}}},
		})
	}
	return out
}

func checkTwoServices(t *testing.T, got []*metricspb.ResourceMetrics) {
	t.Helper()
	if len(got) < 2 {
		t.Fatalf("%d resources, want 2", len(got))
	}
	for i, rm := range got[:2] {
		name := otlptest.Attrs(rm.GetResource().GetAttributes())["service.name"]
		v := rm.GetScopeMetrics()[0].GetMetrics()[0].GetSum().GetDataPoints()[0].GetAsInt()
		if name != []string{"a", "b"}[i] || v != int64(i+1) {
			t.Errorf("resource %d: %v = %d", i, name, v)
		}
	}
}

func TestMetricPusherGRPC(t *testing.T) {
	rcv := otlptest.StartMetrics(t)
	p, err := NewMetricPusher(context.Background(), OTLPConfig{Endpoint: rcv.Endpoint(), Insecure: true}, time.Hour, twoServices)
	if err != nil {
		t.Fatal(err)
	}
	// Shutdown pushes what the interval has not.
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkTwoServices(t, rcv.Received())
	if s := p.Stats(); s.Exports != 2 || s.Points != 2 || s.Failures != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestMetricPusherHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []*metricspb.ResourceMetrics
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := otlptest.ReadBody(r)
		var req collectormetrics.ExportMetricsServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req.GetResourceMetrics()...)
		paths = append(paths, r.URL.Path+" "+r.Header.Get("Content-Encoding")+" "+r.Header.Get("X-Token"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
		w.Write(out)
	}))
	defer srv.Close()
	p, err := NewMetricPusher(context.Background(), OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: srv.URL + "/v1/metrics",
		Compression: "gzip", Headers: map[string]string{"X-Token": "t"}}, 20*time.Millisecond, twoServices)
	if err != nil {
		t.Fatal(err)
	}
	// The timer pushes; then Shutdown once more.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(paths)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	checkTwoServices(t, got)
	if len(paths) < 4 || paths[0] != "/v1/metrics gzip t" {
		t.Errorf("requests %v", paths)
	}
}

func TestMetricPusherCountsFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusBadRequest) // not retried
	}))
	defer srv.Close()
	p, err := NewMetricPusher(context.Background(), OTLPConfig{Protocol: ProtocolHTTPProtobuf, Endpoint: srv.URL + "/v1/metrics"}, time.Hour, twoServices)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Failures != 2 || s.Exports != 0 {
		t.Errorf("stats %+v", s)
	}
}
