package export

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

// otlpSender encodes a batch and uploads it with an OTLP client. The
// client reports a partial success only as an opaque error, so a gRPC
// interceptor (or, over HTTP, outcomeTransport) records the outcome of the
// last request to tell accepted spans from rejected ones.
type otlpSender struct {
	client  otlptrace.Client
	enc     *spanEncoder
	outcome *rpcOutcome
	timeout time.Duration // bounds each export when set
}

func (s *otlpSender) send(ctx context.Context, batch []queued) (int, error) {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	s.outcome.reset()
	err := s.client.UploadTraces(ctx, s.enc.encode(batch))
	if err == nil {
		return len(batch), nil
	}
	if ok, rejected := s.outcome.get(); ok {
		// The request succeeded, so err is the backend's partial success.
		return len(batch) - int(rejected), err
	}
	return 0, err
}

func (s *otlpSender) shutdown(ctx context.Context) error { return s.client.Stop(ctx) }

// rpcOutcome remembers the result of the last Export RPC.
type rpcOutcome struct {
	mu       sync.Mutex
	ok       bool
	rejected int64
}

func (o *rpcOutcome) reset() { o.set(false, 0) }

func (o *rpcOutcome) set(ok bool, rejected int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ok, o.rejected = ok, rejected
}

func (o *rpcOutcome) get() (bool, int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ok, o.rejected
}

func (o *rpcOutcome) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil {
		o.set(false, 0)
		return err
	}
	var rejected int64
	if r, ok := reply.(*collectortrace.ExportTraceServiceResponse); ok {
		rejected = r.GetPartialSuccess().GetRejectedSpans()
	}
	o.set(true, rejected)
	return nil
}
