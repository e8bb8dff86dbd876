package export

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/spans"
)

// ScopeName is the instrumentation scope of every exported span.
const ScopeName = "github.com/weftdev/weft"

// maxResources bounds the encoded resources kept; it matches the default
// process cache of procinfo, as resources are per process.
const maxResources = 4096

// maxSpanAttrs is the most attributes spanAttributes gives a span (22),
// with room: the encoder's arenas are sized by it.
const maxSpanAttrs = 24

// queued is a span waiting for export, a copy (the caller may reuse its
// span as soon as Export returns), with the resource of its process as it
// was when the span ended.
type queued struct {
	span spans.Span
	res  *resource.Resource
}

// encodedResource is a process's resource in OTLP form, made once.
type encodedResource struct {
	pb        *resourcepb.Resource
	schemaURL string
}

// spanEncoder builds the OTLP request for a batch of weft spans straight
// from them: no SDK span, tracer or processor per span. Its arenas are
// reused batch after batch, so that a batch allocates little beyond its
// resource groups. Not safe for concurrent use: the queue's worker owns it.
type spanEncoder struct {
	env       *resource.Resource // weft's own OTEL_RESOURCE_ATTRIBUTES, under every process's
	scope     *commonpb.InstrumentationScope
	resources *lru.Cache[attribute.Distinct, *encodedResource]

	attrs    []attribute.KeyValue
	spans    []tracepb.Span
	statuses []tracepb.Status
	ids      []byte
	kvs      []commonpb.KeyValue
	kvPtrs   []*commonpb.KeyValue
	vals     []commonpb.AnyValue
	strs     []commonpb.AnyValue_StringValue
	ints     []commonpb.AnyValue_IntValue
	groups   map[*encodedResource]*tracepb.ScopeSpans
	out      []*tracepb.ResourceSpans
}

func newSpanEncoder(version string) (*spanEncoder, error) {
	cache, err := lru.New[attribute.Distinct, *encodedResource](maxResources)
	if err != nil {
		return nil, fmt.Errorf("create resource cache: %w", err)
	}
	return &spanEncoder{
		env:       resource.Environment(),
		scope:     &commonpb.InstrumentationScope{Name: ScopeName, Version: version},
		resources: cache,
		groups:    map[*encodedResource]*tracepb.ScopeSpans{},
	}, nil
}

// encode returns the batch as OTLP resource spans, valid until the next
// call. A resource's spans keep their order in the batch.
func (e *spanEncoder) encode(batch []queued) []*tracepb.ResourceSpans {
	e.reset(len(batch))
	clear(e.groups)
	e.out = e.out[:0]
	for i := range batch {
		r := e.resource(batch[i].res)
		ss, ok := e.groups[r]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: e.scope, SchemaUrl: semconv.SchemaURL}
			e.groups[r] = ss
			e.out = append(e.out, &tracepb.ResourceSpans{
				Resource:   r.pb,
				ScopeSpans: []*tracepb.ScopeSpans{ss},
				SchemaUrl:  r.schemaURL,
			})
		}
		ss.Spans = append(ss.Spans, e.span(i, &batch[i].span))
	}
	return e.out
}

// reset sizes the arenas for n spans. Nothing handed out by the last
// batch is used any more; the arenas are never grown mid-batch, which
// would move what was handed out.
func (e *spanEncoder) reset(n int) {
	if cap(e.spans) < n {
		e.spans = make([]tracepb.Span, n)
		e.statuses = make([]tracepb.Status, n)
		e.ids = make([]byte, n*32)
		e.kvs = make([]commonpb.KeyValue, n*maxSpanAttrs)
		e.kvPtrs = make([]*commonpb.KeyValue, n*maxSpanAttrs)
		e.vals = make([]commonpb.AnyValue, n*maxSpanAttrs)
		e.strs = make([]commonpb.AnyValue_StringValue, n*maxSpanAttrs)
		e.ints = make([]commonpb.AnyValue_IntValue, n*maxSpanAttrs)
	}
}

// resource is res merged over weft's own environment's resource, as the
// SDK's TracerProvider merges it, in OTLP form.
func (e *spanEncoder) resource(res *resource.Resource) *encodedResource {
	if res == nil {
		res = resource.Empty()
	}
	key := res.Equivalent()
	if r, ok := e.resources.Get(key); ok {
		return r
	}
	// On a schema conflict Merge still returns the merged attributes.
	merged, _ := resource.Merge(e.env, res)
	r := &encodedResource{
		pb:        &resourcepb.Resource{Attributes: keyValues(merged.Attributes())},
		schemaURL: merged.SchemaURL(),
	}
	e.resources.Add(key, r)
	return r
}

// span encodes s as the i-th span of the batch.
func (e *spanEncoder) span(i int, s *spans.Span) *tracepb.Span {
	ids := e.ids[i*32 : i*32+32 : i*32+32]
	tid, sid, pid := ids[:16:16], ids[16:24:24], ids[24:32:32]
	copy(tid, s.TraceID[:])
	copy(sid, s.SpanID[:])
	if !s.TraceID.IsValid() { // never from the correlator: exported, not lost
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64()|1)
	}
	if !s.SpanID.IsValid() {
		binary.BigEndian.PutUint64(sid, rand.Uint64()|1)
	}
	// Flags as the SDK's always-on sampler set them: the parent's trace
	// flags with sampled, or sampled alone for a root.
	var flags uint32
	if s.ParentID.IsValid() {
		flags = uint32(s.TraceFlags)
	}
	flags |= uint32(trace.FlagsSampled) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if s.ParentID.IsValid() && s.ParentRemote {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	st := &e.statuses[i]
	*st = tracepb.Status{}
	if code, desc := spanStatus(s); code == codes.Error {
		*st = tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: desc}
	}
	e.attrs = spanAttributes(s, e.attrs[:0])
	sp := &e.spans[i]
	*sp = tracepb.Span{
		TraceId:           tid,
		SpanId:            sid,
		Flags:             flags,
		Name:              spanName(s),
		Kind:              otlpKind(s.Kind),
		StartTimeUnixNano: unixNano(s.Start),
		EndTimeUnixNano:   unixNano(s.End),
		Attributes:        e.spanAttrs(i, e.attrs),
		Status:            st,
	}
	if s.ParentID.IsValid() {
		copy(pid, s.ParentID[:])
		sp.ParentSpanId = pid
	}
	return sp
}

// spanAttrs encodes the i-th span's attributes into its share of the
// arenas; any beyond it, or of types weft's spans do not use, go to the
// heap.
func (e *spanEncoder) spanAttrs(i int, attrs []attribute.KeyValue) []*commonpb.KeyValue {
	base := i * maxSpanAttrs
	ptrs := e.kvPtrs[base : base : base+maxSpanAttrs]
	for j, a := range attrs {
		if j >= maxSpanAttrs {
			ptrs = append(ptrs, keyValue(a))
			continue
		}
		k := base + j
		v := &e.vals[k]
		switch a.Value.Type() {
		case attribute.STRING:
			e.strs[k] = commonpb.AnyValue_StringValue{StringValue: a.Value.AsString()}
			*v = commonpb.AnyValue{Value: &e.strs[k]}
		case attribute.INT64:
			e.ints[k] = commonpb.AnyValue_IntValue{IntValue: a.Value.AsInt64()}
			*v = commonpb.AnyValue{Value: &e.ints[k]}
		default:
			v = anyValue(a.Value)
		}
		e.kvs[k] = commonpb.KeyValue{Key: string(a.Key), Value: v}
		ptrs = append(ptrs, &e.kvs[k])
	}
	if len(ptrs) == 0 {
		return nil
	}
	return ptrs
}

func otlpKind(k spans.Kind) tracepb.Span_SpanKind {
	switch k {
	case spans.KindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case spans.KindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	}
	return tracepb.Span_SPAN_KIND_INTERNAL
}

func unixNano(t time.Time) uint64 { return uint64(max(0, t.UnixNano())) }

func keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, len(attrs))
	for i, a := range attrs {
		out[i] = keyValue(a)
	}
	return out
}

func keyValue(a attribute.KeyValue) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: string(a.Key), Value: anyValue(a.Value)}
}

// anyValue is v in OTLP form, for every attribute type (resources carry
// slices: process.command_args).
func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.STRING:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.AsString()}}
	case attribute.BOOLSLICE:
		return arrayValue(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayValue(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayValue(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayValue(v.AsStringSlice(), attribute.StringValue)
	}
	return &commonpb.AnyValue{}
}

func arrayValue[T any](elems []T, value func(T) attribute.Value) *commonpb.AnyValue {
	vals := make([]*commonpb.AnyValue, len(elems))
	for i, el := range elems {
		vals[i] = anyValue(value(el))
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
}
