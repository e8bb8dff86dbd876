package otlptest

import (
	"context"
	"net"
	"sync"
	"testing"

	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// MetricsReceiver is an OTLP/gRPC metrics receiver on a loopback port.
type MetricsReceiver struct {
	collectormetrics.UnimplementedMetricsServiceServer

	addr string
	srv  *grpc.Server

	mu       sync.Mutex
	received []*metricspb.ResourceMetrics
}

// StartMetrics returns a listening metrics receiver, stopped when the test
// ends.
func StartMetrics(t testing.TB) *MetricsReceiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	r := &MetricsReceiver{addr: l.Addr().String(), srv: grpc.NewServer()}
	collectormetrics.RegisterMetricsServiceServer(r.srv, r)
	go func() { _ = r.srv.Serve(l) }()
	t.Cleanup(r.srv.Stop)
	return r
}

// Endpoint is the receiver's host:port, for an insecure gRPC exporter.
func (r *MetricsReceiver) Endpoint() string { return r.addr }

// Export records the request's resource metrics.
func (r *MetricsReceiver) Export(_ context.Context, req *collectormetrics.ExportMetricsServiceRequest) (*collectormetrics.ExportMetricsServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rm := range req.GetResourceMetrics() {
		r.received = append(r.received, proto.Clone(rm).(*metricspb.ResourceMetrics))
	}
	return &collectormetrics.ExportMetricsServiceResponse{}, nil
}

// Received returns every resource's metrics received so far, in order.
func (r *MetricsReceiver) Received() []*metricspb.ResourceMetrics {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*metricspb.ResourceMetrics(nil), r.received...)
}
