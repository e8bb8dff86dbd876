package export

import (
	"bytes"
	"context"
	"maps"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/spans"
)

// testOTLPConfig uses short retry and reconnect settings so outages resolve
// within a test's time budget.
func testOTLPConfig(endpoint string) OTLPConfig {
	return OTLPConfig{
		Endpoint:             endpoint,
		Insecure:             true,
		Timeout:              2 * time.Second,
		RetryInitialInterval: 10 * time.Millisecond,
		RetryMaxInterval:     20 * time.Millisecond,
		RetryMaxElapsed:      100 * time.Millisecond,
		ReconnectMaxDelay:    50 * time.Millisecond,
		BatchTimeout:         20 * time.Millisecond,
		Version:              "1.2.3",
	}
}

func newTestOTLP(t *testing.T, cfg OTLPConfig) *OTLP {
	t.Helper()
	exp, err := NewOTLP(context.Background(), cfg, fakeResolver{1234: "frontend", 77: "billing"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = exp.Shutdown(ctx)
	})
	return exp
}

func waitRecords(t *testing.T, rcv *otlptest.Receiver, n int) []otlptest.Record {
	t.Helper()
	recs, ok := rcv.WaitFor(n, 5*time.Second)
	if !ok {
		t.Fatalf("received %d spans, want %d", len(recs), n)
	}
	return recs
}

// settled waits until every received span is accounted for.
func settled(t *testing.T, exp Exporter) Stats {
	t.Helper()
	var s Stats
	waitUntil(t, "all spans accounted for", func() bool {
		s = exp.Stats()
		return s.QueueLen == 0 && s.Exported+s.Dropped+s.Failed == s.Received
	})
	return s
}

// The caller's span is its own again when Export returns (the profile
// linker hands over spans from a buffer it reuses): what is sent is the
// span as it was then.
func TestOTLPExportCopiesTheSpan(t *testing.T) {
	rcv := otlptest.Start(t)
	exp := newTestOTLP(t, testOTLPConfig(rcv.Endpoint()))
	s := serverSpan()
	want := *s
	exp.Export(s)
	*s = spans.Span{Name: "reused", TraceID: spans.TraceID{9}, SpanID: spans.SpanID{9}}
	recs := waitRecords(t, rcv, 1)
	got := recs[0].Span
	if got.GetName() != want.Name || !bytes.Equal(got.GetTraceId(), want.TraceID[:]) || !bytes.Equal(got.GetSpanId(), want.SpanID[:]) {
		t.Fatalf("sent %q %x/%x, want the span as exported: %q %x/%x", got.GetName(), got.GetTraceId(), got.GetSpanId(), want.Name, want.TraceID, want.SpanID)
	}
}

func TestOTLPExportsSpansExactly(t *testing.T) {
	rcv := otlptest.Start(t)
	exp := newTestOTLP(t, testOTLPConfig(rcv.Endpoint()))
	server, client := serverSpan(), clientSpan()
	exp.Export(server)
	exp.Export(client)
	recs := waitRecords(t, rcv, 2)

	byName := map[string]otlptest.Record{}
	for _, r := range recs {
		byName[r.Span.GetName()] = r
	}
	srv, cli := byName[server.Name], byName[client.Name]
	if srv.Span == nil || cli.Span == nil {
		t.Fatalf("spans missing: %v", byName)
	}

	checkSpan := func(r otlptest.Record, s *spans.Span, kind tracepb.Span_SpanKind, parent []byte, flags uint32) {
		t.Helper()
		p := r.Span
		if !bytes.Equal(p.GetTraceId(), s.TraceID[:]) || !bytes.Equal(p.GetSpanId(), s.SpanID[:]) {
			t.Errorf("%s: ids %x/%x, want %s/%s", p.GetName(), p.GetTraceId(), p.GetSpanId(), s.TraceID, s.SpanID)
		}
		if !bytes.Equal(p.GetParentSpanId(), parent) {
			t.Errorf("%s: parent %x, want %x", p.GetName(), p.GetParentSpanId(), parent)
		}
		if p.GetStartTimeUnixNano() != uint64(s.Start.UnixNano()) || p.GetEndTimeUnixNano() != uint64(s.End.UnixNano()) {
			t.Errorf("%s: times %d..%d, want %d..%d", p.GetName(), p.GetStartTimeUnixNano(), p.GetEndTimeUnixNano(), s.Start.UnixNano(), s.End.UnixNano())
		}
		if p.GetKind() != kind {
			t.Errorf("%s: kind %v, want %v", p.GetName(), p.GetKind(), kind)
		}
		if p.GetFlags() != flags {
			t.Errorf("%s: flags %#x, want %#x", p.GetName(), p.GetFlags(), flags)
		}
		want := attrsOf(s)
		if got := otlptest.Attrs(p.GetAttributes()); !maps.Equal(got, want) {
			t.Errorf("%s: attributes\n got %v\nwant %v", p.GetName(), got, want)
		}
		if r.Scope.GetName() != ScopeName || r.Scope.GetVersion() != "1.2.3" {
			t.Errorf("%s: scope %v", p.GetName(), r.Scope)
		}
	}
	// Flags: sampled (0x1), "has is_remote" (0x100), "is remote" (0x200).
	checkSpan(srv, server, tracepb.Span_SPAN_KIND_SERVER, server.ParentID[:], 0x301)
	checkSpan(cli, client, tracepb.Span_SPAN_KIND_CLIENT, nil, 0x101)

	if st := srv.Span.GetStatus(); st.GetCode() != tracepb.Status_STATUS_CODE_ERROR || st.GetMessage() != "" {
		t.Errorf("server status %v, want ERROR without message", st)
	}
	if st := cli.Span.GetStatus(); st.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("client status %v, want UNSET", st)
	}
	if srv.ServiceName != "frontend" || cli.ServiceName != "billing" {
		t.Errorf("services %q and %q", srv.ServiceName, cli.ServiceName)
	}
	if srv.Resource["process.pid"] != int64(1234) || cli.Resource["process.pid"] != int64(77) {
		t.Errorf("resources %v and %v", srv.Resource, cli.Resource)
	}
	for k := range srv.Resource {
		if k == "telemetry.sdk.name" {
			t.Errorf("SDK resource attributes leaked into %v", srv.Resource)
		}
	}
	if s := settled(t, exp); s.Exported != 2 || s.Received != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestOTLPLocalParent(t *testing.T) {
	rcv := otlptest.Start(t)
	exp := newTestOTLP(t, testOTLPConfig(rcv.Endpoint()))
	s := clientSpan()
	s.ParentID = spans.SpanID{9, 9, 9, 9, 9, 9, 9, 9}
	exp.Export(s)
	p := waitRecords(t, rcv, 1)[0].Span
	if !bytes.Equal(p.GetParentSpanId(), s.ParentID[:]) || p.GetFlags() != 0x101 || !bytes.Equal(p.GetTraceId(), s.TraceID[:]) {
		t.Fatalf("parent %x flags %#x trace %x", p.GetParentSpanId(), p.GetFlags(), p.GetTraceId())
	}
}

func TestOTLPGroupsByService(t *testing.T) {
	rcv := otlptest.Start(t)
	exp := newTestOTLP(t, testOTLPConfig(rcv.Endpoint()))
	for range 3 {
		exp.Export(serverSpan())
		exp.Export(clientSpan())
	}
	recs := waitRecords(t, rcv, 6)
	services := map[string]int{}
	resources := map[int64]bool{}
	for _, r := range recs {
		services[r.ServiceName]++
		resources[r.Resource["process.pid"].(int64)] = true
	}
	if services["frontend"] != 3 || services["billing"] != 3 || len(resources) != 2 {
		t.Fatalf("services %v, resources %v", services, resources)
	}
}

func TestOTLPHeaders(t *testing.T) {
	rcv := otlptest.Start(t)
	cfg := testOTLPConfig(rcv.Endpoint())
	cfg.Headers = map[string]string{"x-tenant": "acme"}
	exp := newTestOTLP(t, cfg)
	exp.Export(serverSpan())
	waitRecords(t, rcv, 1)
	md := rcv.Metadata()
	if len(md) == 0 || len(md[0].Get("x-tenant")) == 0 || md[0].Get("x-tenant")[0] != "acme" {
		t.Fatalf("metadata %v", md)
	}
}

func TestOTLPBackendOutage(t *testing.T) {
	rcv := otlptest.New(t) // not listening yet
	cfg := testOTLPConfig(rcv.Endpoint())
	cfg.QueueSize = 8
	cfg.MaxBatchSize = 4
	exp := newTestOTLP(t, cfg)

	for range 50 {
		exp.Export(serverSpan())
		if q := exp.Stats().QueueLen; q > cfg.QueueSize+cfg.MaxBatchSize {
			t.Fatalf("queue grew to %d", q)
		}
	}
	s := settled(t, exp)
	if s.Received != 50 || s.Exported != 0 || s.Failed == 0 || s.Dropped == 0 {
		t.Fatalf("while down: %+v, want failures and drops", s)
	}

	rcv.Start(t)
	exportUntilReceived(t, exp, rcv)

	// Settle first: a request cut off by Stop may have reached the
	// receiver without the exporter seeing the answer.
	before := settled(t, exp).Failed
	rcv.Stop()
	exp.Export(serverSpan())
	waitUntil(t, "failure while stopped", func() bool { return exp.Stats().Failed > before })

	rcv.Start(t)
	exportUntilReceived(t, exp, rcv)
	s = settled(t, exp)
	if got := uint64(len(rcv.Spans())); s.Exported != got {
		t.Fatalf("exported %d, receiver has %d", s.Exported, got)
	}
}

// exportUntilReceived exports a span at a time until the receiver gets one,
// which tolerates gRPC still reconnecting.
func exportUntilReceived(t *testing.T, exp Exporter, rcv *otlptest.Receiver) {
	t.Helper()
	n := len(rcv.Spans())
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		exp.Export(serverSpan())
		if _, ok := rcv.WaitFor(n+1, 50*time.Millisecond); ok {
			return
		}
	}
	t.Fatal("export did not resume")
}

func TestOTLPRejectedSpansCountAsFailed(t *testing.T) {
	rcv := otlptest.Start(t)
	rcv.SetPartialSuccess(1)
	cfg := testOTLPConfig(rcv.Endpoint())
	cfg.BatchTimeout = time.Hour
	cfg.MaxBatchSize = 3
	exp := newTestOTLP(t, cfg)
	for range 3 {
		exp.Export(serverSpan())
	}
	if s := settled(t, exp); s.Exported != 2 || s.Failed != 1 {
		t.Fatalf("stats %+v, want 2 exported, 1 failed", s)
	}

	rcv.SetPartialSuccess(0)
	rcv.SetError(status.Error(codes.InvalidArgument, "bad request")) // not retryable
	for range 3 {
		exp.Export(serverSpan())
	}
	if s := settled(t, exp); s.Exported != 2 || s.Failed != 4 {
		t.Fatalf("stats %+v, want 2 exported, 4 failed", s)
	}
}

func TestOTLPShutdownFlushes(t *testing.T) {
	rcv := otlptest.Start(t)
	cfg := testOTLPConfig(rcv.Endpoint())
	cfg.BatchTimeout = time.Hour
	exp := newTestOTLP(t, cfg)
	for range 10 {
		exp.Export(clientSpan())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.Spans()); n != 10 {
		t.Fatalf("receiver has %d spans after shutdown, want 10", n)
	}
	exp.Export(clientSpan())
	if s := exp.Stats(); s.Exported != 10 || s.Dropped != 1 || s.Received != 11 {
		t.Fatalf("stats %+v", s)
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

func TestOTLPShutdownRespectsDeadline(t *testing.T) {
	rcv := otlptest.New(t) // never started
	cfg := testOTLPConfig(rcv.Endpoint())
	cfg.BatchTimeout = time.Hour
	cfg.RetryMaxElapsed = 10 * time.Second
	cfg.Timeout = 10 * time.Second
	exp := newTestOTLP(t, cfg)
	for range 5 {
		exp.Export(serverSpan())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := exp.Shutdown(ctx); err == nil {
		t.Fatal("shutdown with an unreachable backend reported success")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	if s := exp.Stats(); s.Failed+s.Dropped != 5 || s.QueueLen != 0 {
		t.Fatalf("stats %+v", s)
	}
}
