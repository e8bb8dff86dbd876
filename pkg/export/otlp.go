package export

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"

	"github.com/weftdev/weft/pkg/spans"
)

// OTLP exports spans over OTLP/gRPC or OTLP/HTTP, keeping the ids,
// timestamps and parentage weft decided. Spans are encoded to OTLP wire
// bytes straight from weft's model (spanEncoder) and sent with the
// OpenTelemetry exporters' clients, which keep the OTEL_EXPORTER_OTLP_*
// configuration, TLS, headers, compression and retries.
type OTLP struct {
	resolver Resolver
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
	return o, nil
}

// newSender makes the OTLP client of cfg.Protocol. Certificate files are
// loaded here, so that a bad one stops weft at start-up.
func newSender(ctx context.Context, cfg OTLPConfig) (sender, error) {
	tlsCfg, err := cfg.TLS.Config()
	if err != nil {
		return nil, err
	}
	enc, err := newSpanEncoder(cfg.Version)
	if err != nil {
		return nil, err
	}
	out := &otlpSender{enc: enc, outcome: &rpcOutcome{}}
	switch cfg.Protocol {
	case "", ProtocolGRPC:
		opts, err := cfg.grpcOptions(tlsCfg, out.outcome)
		if err != nil {
			return nil, err
		}
		out.client = otlptracegrpc.NewClient(opts...)
	case ProtocolHTTPProtobuf:
		opts, err := cfg.httpOptions(tlsCfg, out.outcome)
		if err != nil {
			return nil, err
		}
		out.client = otlptracehttp.NewClient(opts...)
		// otlptracegrpc bounds each export, retries included, by the
		// timeout itself; over HTTP the sender does.
		out.timeout = cfg.Timeout
	default:
		return nil, fmt.Errorf("otlp protocol %q: want %s or %s", cfg.Protocol, ProtocolGRPC, ProtocolHTTPProtobuf)
	}
	if err := out.client.Start(ctx); err != nil {
		return nil, fmt.Errorf("start otlp client: %w", err)
	}
	return out, nil
}

var _ otlptrace.Client = otlptracegrpc.NewClient()

// Export queues a copy of s with its process's resource; it never blocks
// on the network, and s is the caller's again when it returns.
func (o *OTLP) Export(s *spans.Span) {
	o.stats.received.Add(1)
	res, _ := o.resolver.Resolve(s.PID)
	o.queue.enqueue(queued{span: *s, res: res})
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
