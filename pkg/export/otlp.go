package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftdev/weft/pkg/spans"
)

// OTLP exports spans over OTLP/gRPC or OTLP/HTTP through the OpenTelemetry
// SDK, keeping the ids, timestamps and parentage weft decided.
type OTLP struct {
	resolver Resolver
	tracers  *tracers
	queue    *queue
	stats    counters
}

var _ Exporter = (*OTLP)(nil)

// NewOTLP creates the exporter and starts its worker. The connection is made
// lazily, so an unreachable backend is not an error here.
func NewOTLP(ctx context.Context, cfg OTLPConfig, resolver Resolver) (*OTLP, error) {
	if resolver == nil {
		return nil, errors.New("create otlp exporter: nil resolver")
	}
	if cfg.Endpoint == "" {
		return nil, errors.New("create otlp exporter: no endpoint")
	}
	cfg = cfg.withDefaults()
	log := slog.With("component", "export")

	out, err := newSender(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create otlp exporter: %w", err)
	}
	o := &OTLP{resolver: resolver}
	o.queue = newQueue(queueConfig{
		size:         cfg.QueueSize,
		maxBatch:     cfg.MaxBatchSize,
		batchTimeout: cfg.BatchTimeout,
	}, out, &o.stats, log)
	o.tracers, err = newTracers(providerHook{q: o.queue}, cfg.Version)
	if err != nil {
		return nil, errors.Join(err, o.queue.shutdown(ctx))
	}
	return o, nil
}

// newSender makes the SDK exporter of cfg.Protocol. Certificate files are
// loaded here, so that a bad one stops weft at start-up.
func newSender(ctx context.Context, cfg OTLPConfig) (sender, error) {
	tlsCfg, err := cfg.TLS.Config()
	if err != nil {
		return nil, err
	}
	outcome := &rpcOutcome{}
	switch cfg.Protocol {
	case "", ProtocolGRPC:
		opts, err := cfg.grpcOptions(tlsCfg, outcome)
		if err != nil {
			return nil, err
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		if err != nil {
			return nil, err
		}
		return &otlpSender{exp: exp, outcome: outcome}, nil
	case ProtocolHTTPProtobuf:
		opts, err := cfg.httpOptions(tlsCfg, outcome)
		if err != nil {
			return nil, err
		}
		exp, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, err
		}
		return &httpSender{otlpSender: otlpSender{exp: exp, outcome: outcome}, timeout: cfg.Timeout}, nil
	}
	return nil, fmt.Errorf("otlp protocol %q: want %s or %s", cfg.Protocol, ProtocolGRPC, ProtocolHTTPProtobuf)
}

// Export records s through the SDK and queues it; it never blocks on the
// network.
func (o *OTLP) Export(s *spans.Span) {
	o.stats.received.Add(1)
	res, _ := o.resolver.Resolve(s.PID)
	tr := o.tracers.get(res)

	ctx := withIDs(context.Background(), trace.TraceID(s.TraceID), trace.SpanID(s.SpanID))
	if s.ParentID.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID(s.TraceID),
			SpanID:     trace.SpanID(s.ParentID),
			TraceFlags: trace.TraceFlags(s.TraceFlags),
			Remote:     s.ParentRemote,
		}))
	}
	_, span := tr.Start(ctx, spanName(s),
		trace.WithSpanKind(spanKind(s.Kind)),
		trace.WithTimestamp(s.Start),
		trace.WithAttributes(spanAttributes(s)...),
	)
	if code, desc := spanStatus(s); code != codes.Unset {
		span.SetStatus(code, desc)
	}
	span.End(trace.WithTimestamp(s.End))
}

// Shutdown exports what is queued within ctx, counts what could not be sent
// in time as dropped, and closes the connection.
func (o *OTLP) Shutdown(ctx context.Context) error {
	if err := o.queue.shutdown(ctx); err != nil {
		return fmt.Errorf("shut down otlp exporter: %w", err)
	}
	return nil
}

// Stats returns the current counters.
func (o *OTLP) Stats() Stats { return o.stats.snapshot() }
