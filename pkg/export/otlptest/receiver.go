// Package otlptest provides an in-process OTLP trace receiver for tests,
// over gRPC or (as an http.Handler) OTLP/HTTP, and test certificates.
package otlptest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// Record is one received span with the resource and scope it came with.
type Record struct {
	ServiceName string
	Resource    map[string]any // see Attrs for the value types
	Scope       *commonpb.InstrumentationScope
	Span        *tracepb.Span

	// As received, for tests that compare whole exports.
	ResourceSpans *tracepb.ResourceSpans
	ScopeSpans    *tracepb.ScopeSpans
}

// Receiver is an OTLP/gRPC trace receiver on a loopback port. Its address is
// fixed when it is created, so it can be stopped and started again on the
// same endpoint to simulate a backend outage.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer

	addr string

	mu       sync.Mutex
	srv      *grpc.Server
	records  []Record
	metadata []metadata.MD
	err      error
	rejected int64
	changed  chan struct{} // closed and replaced whenever records change
}

// New returns a receiver with a reserved loopback endpoint that is not
// listening yet: exporters pointed at it see connection refused until Start.
// It is stopped when the test ends.
func New(t testing.TB) *Receiver {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("reserve receiver port: %v", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatalf("release receiver port: %v", err)
	}
	r := &Receiver{addr: addr, changed: make(chan struct{})}
	t.Cleanup(r.Stop)
	return r
}

// Start returns a listening receiver, stopped when the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	r := New(t)
	r.Start(t)
	return r
}

// Start begins serving on the receiver's endpoint. Starting a running
// receiver is a no-op.
func (r *Receiver) Start(t testing.TB) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		return
	}
	l, err := net.Listen("tcp", r.addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", r.addr, err)
	}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	r.srv = srv
	go func() { _ = srv.Serve(l) }()
}

// Stop closes the listener and all connections. Received records are kept.
func (r *Receiver) Stop() {
	r.mu.Lock()
	srv := r.srv
	r.srv = nil
	r.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

// Endpoint is the receiver's host:port, for an insecure gRPC exporter.
func (r *Receiver) Endpoint() string { return r.addr }

// SetError makes Export fail with err (a gRPC status error, typically) until
// it is called again with nil.
func (r *Receiver) SetError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// SetPartialSuccess makes Export answer with a partial success rejecting n
// spans (the spans are still recorded) until it is called again with 0.
func (r *Receiver) SetPartialSuccess(n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected = n
}

// Spans returns a copy of everything received so far.
func (r *Receiver) Spans() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.records...)
}

// Metadata returns the incoming gRPC metadata (headers) of each request.
func (r *Receiver) Metadata() []metadata.MD {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]metadata.MD(nil), r.metadata...)
}

// Reset forgets the received records and metadata.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = nil
	r.metadata = nil
}

// WaitFor waits until at least n spans have been received or timeout has
// passed, and returns the spans received so far and whether n were reached.
func (r *Receiver) WaitFor(n int, timeout time.Duration) ([]Record, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		if len(r.records) >= n {
			out := append([]Record(nil), r.records...)
			r.mu.Unlock()
			return out, true
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return r.Spans(), false
		}
	}
}

// Export implements collectortrace.TraceServiceServer.
func (r *Receiver) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	return r.export(md, req)
}

// export records req, received with md, and answers as configured.
func (r *Receiver) export(md metadata.MD, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metadata = append(r.metadata, md.Copy())
	if r.err != nil {
		return nil, r.err
	}
	for _, rs := range req.GetResourceSpans() {
		res := Attrs(rs.GetResource().GetAttributes())
		service, _ := res["service.name"].(string)
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.records = append(r.records, Record{
					ServiceName: service, Resource: res, Scope: ss.GetScope(), Span: s,
					ResourceSpans: rs, ScopeSpans: ss,
				})
			}
		}
	}
	close(r.changed)
	r.changed = make(chan struct{})
	resp := &collectortrace.ExportTraceServiceResponse{}
	if r.rejected > 0 {
		resp.PartialSuccess = &collectortrace.ExportTracePartialSuccess{
			RejectedSpans: r.rejected,
			ErrorMessage:  "rejected by otlptest",
		}
	}
	return resp, nil
}

// Attrs flattens OTLP attributes into Go values: string, bool, int64,
// float64, []byte, []any for arrays and map[string]any for kvlists.
func Attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BytesValue:
		return x.BytesValue
	case *commonpb.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, value(e))
		}
		return out
	case *commonpb.AnyValue_KvlistValue:
		return Attrs(x.KvlistValue.GetValues())
	}
	return nil
}
