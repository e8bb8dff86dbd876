package export

import (
	"context"
	"encoding/binary"
	"math/rand/v2"

	"go.opentelemetry.io/otel/trace"
)

// idsKey carries the ids weft chose for a span into the SDK's IDGenerator:
// the SDK has no other way to accept ids it did not make itself.
type idsKey struct{}

type spanIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

func withIDs(ctx context.Context, tid trace.TraceID, sid trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, spanIDs{trace: tid, span: sid})
}

// contextIDs is an sdktrace.IDGenerator that returns the ids stored by
// withIDs. It falls back to random ids only when a span arrives without valid
// ones, so a malformed span is still exported rather than lost.
type contextIDs struct{}

func (contextIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	ids, _ := ctx.Value(idsKey{}).(spanIDs)
	if !ids.trace.IsValid() {
		binary.BigEndian.PutUint64(ids.trace[:8], rand.Uint64())
		binary.BigEndian.PutUint64(ids.trace[8:], rand.Uint64()|1)
	}
	if !ids.span.IsValid() {
		ids.span = randomSpanID()
	}
	return ids.trace, ids.span
}

func (contextIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	ids, _ := ctx.Value(idsKey{}).(spanIDs)
	if !ids.span.IsValid() {
		return randomSpanID()
	}
	return ids.span
}

func randomSpanID() trace.SpanID {
	var id trace.SpanID
	binary.BigEndian.PutUint64(id[:], rand.Uint64()|1)
	return id
}
