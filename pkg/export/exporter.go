// Package export ships finished spans to an OTLP backend or to a console.
package export

import (
	"context"
	"sync/atomic"

	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/weftdev/weft/pkg/spans"
)

// Exporter ships finished spans. Implementations are safe for concurrent use
// and never block Export on the network. Export does not keep the span:
// the caller may reuse it as soon as Export returns.
type Exporter interface {
	Export(*spans.Span)
	// Shutdown flushes what it can within ctx and releases resources.
	// Spans exported afterwards are counted as dropped.
	Shutdown(ctx context.Context) error
	Stats() Stats
}

// Stats are cumulative counters since the exporter was created. Every
// received span ends up in exactly one of Exported, Dropped and Failed, or is
// still counted in QueueLen.
type Stats struct {
	Received uint64 // spans handed to Export
	Exported uint64 // spans the backend accepted (or the console wrote)
	Dropped  uint64 // spans discarded without an export attempt: queue full or shut down
	Failed   uint64 // spans discarded because their export failed after retries
	QueueLen int    // spans waiting for export, including the batch being sent
}

// Resolver names the process that produced a span; *procinfo.Resolver
// implements it.
type Resolver interface {
	Resolve(pid uint32) (res *resource.Resource, serviceName string)
}

// counters backs Stats with atomics so the hot path takes no lock.
type counters struct {
	received, exported, dropped, failed atomic.Uint64
	queued                              atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Received: c.received.Load(),
		Exported: c.exported.Load(),
		Dropped:  c.dropped.Load(),
		Failed:   c.failed.Load(),
		QueueLen: int(c.queued.Load()),
	}
}
