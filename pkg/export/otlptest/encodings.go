package otlptest

import (
	"context"
	"sync"

	"google.golang.org/grpc/stats"
)

// Encodings is a gRPC server stats handler (grpc.StatsHandler) that keeps
// the grpc-encoding of each request: what tests of compression look at.
type Encodings struct {
	mu  sync.Mutex
	got []string
}

func (e *Encodings) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (e *Encodings) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (e *Encodings) HandleConn(context.Context, stats.ConnStats)                       {}

func (e *Encodings) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		e.mu.Lock()
		e.got = append(e.got, h.Compression)
		e.mu.Unlock()
	}
}

// Seen returns the encodings of the requests so far, in order.
func (e *Encodings) Seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.got...)
}
