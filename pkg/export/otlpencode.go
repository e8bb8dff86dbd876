package export

import (
	"encoding/binary"
	"fmt"
	"math"
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
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weftdev/weft/pkg/spans"
)

// ScopeName is the instrumentation scope of every exported span.
const ScopeName = "github.com/weftdev/weft"

// maxResources bounds the encoded resources kept; it matches the default
// process cache of procinfo, as resources are per process.
const maxResources = 4096

// queued is a span waiting for export, a copy (the caller may reuse its
// span as soon as Export returns), with the resource of its process as it
// was when the span ended.
type queued struct {
	span spans.Span
	res  *resource.Resource
}

// encodedResource is a process's resource in OTLP form, made once: the
// ResourceSpans fields that precede its scope spans (the resource) and
// follow them (its schema URL), already encoded.
type encodedResource struct {
	head []byte
	tail []byte
}

// spanEncoder builds the OTLP request for a batch of weft spans straight
// from them, as protobuf wire bytes (protowire): no SDK span, tracer or
// processor per span, and no generic marshalling of the ~25 messages a
// span is made of. Each resource's group is handed to the OTLP client as
// a tracepb.ResourceSpans whose fields are all carried as that message's
// unknown fields, which protobuf marshals as they are: the client keeps
// its configuration, retries and partial-success handling, and the bytes
// on the wire are weft's. Its buffers are reused batch after batch. Not
// safe for concurrent use: the queue's worker owns it.
type spanEncoder struct {
	env       *resource.Resource // weft's own OTEL_RESOURCE_ATTRIBUTES, under every process's
	scope     []byte             // the ScopeSpans fields before its spans
	resources *lru.Cache[attribute.Distinct, *encodedResource]

	attrs  []attribute.KeyValue
	addrs  addrNames
	order  []*encodedResource
	groups map[*encodedResource][]int // batch indexes, in batch order
	span   []byte                     // one span's message
	spansB []byte                     // one group's spans, each with its tag
	wire   []byte                     // every group's ResourceSpans fields
	rs     []tracepb.ResourceSpans
	out    []*tracepb.ResourceSpans
}

func newSpanEncoder(version string) (*spanEncoder, error) {
	cache, err := lru.New[attribute.Distinct, *encodedResource](maxResources)
	if err != nil {
		return nil, fmt.Errorf("create resource cache: %w", err)
	}
	scope, err := proto.Marshal(&commonpb.InstrumentationScope{Name: ScopeName, Version: version})
	if err != nil {
		return nil, fmt.Errorf("encode instrumentation scope: %w", err)
	}
	return &spanEncoder{
		env:       resource.Environment(),
		scope:     protowire.AppendBytes(protowire.AppendTag(nil, fieldScopeSpansScope, protowire.BytesType), scope),
		resources: cache,
		groups:    map[*encodedResource][]int{},
	}, nil
}

// Field numbers of opentelemetry/proto/trace/v1/trace.proto and
// common/v1/common.proto.
const (
	fieldResourceSpansResource   protowire.Number = 1
	fieldResourceSpansScopeSpans protowire.Number = 2
	fieldResourceSpansSchemaURL  protowire.Number = 3
	fieldScopeSpansScope         protowire.Number = 1
	fieldScopeSpansSpans         protowire.Number = 2
	fieldScopeSpansSchemaURL     protowire.Number = 3
	fieldSpanTraceID             protowire.Number = 1
	fieldSpanSpanID              protowire.Number = 2
	fieldSpanParentSpanID        protowire.Number = 4
	fieldSpanName                protowire.Number = 5
	fieldSpanKind                protowire.Number = 6
	fieldSpanStart               protowire.Number = 7
	fieldSpanEnd                 protowire.Number = 8
	fieldSpanAttributes          protowire.Number = 9
	fieldSpanStatus              protowire.Number = 15
	fieldSpanFlags               protowire.Number = 16
	fieldStatusMessage           protowire.Number = 2
	fieldStatusCode              protowire.Number = 3
	fieldKeyValueKey             protowire.Number = 1
	fieldKeyValueValue           protowire.Number = 2
	fieldAnyValueString          protowire.Number = 1
	fieldAnyValueBool            protowire.Number = 2
	fieldAnyValueInt             protowire.Number = 3
	fieldAnyValueDouble          protowire.Number = 4
)

// encode returns the batch as OTLP resource spans, valid until the next
// call. A resource's spans keep their order in the batch.
func (e *spanEncoder) encode(batch []queued) []*tracepb.ResourceSpans {
	e.order = e.order[:0]
	for r, idx := range e.groups {
		e.groups[r] = idx[:0]
	}
	for i := range batch {
		r := e.resource(batch[i].res)
		idx, seen := e.groups[r]
		if !seen || len(idx) == 0 {
			e.order = append(e.order, r)
		}
		e.groups[r] = append(idx, i)
	}
	// Groups of resources gone from the cache would pile up.
	if len(e.groups) > 2*maxResources {
		for r, idx := range e.groups {
			if len(idx) == 0 {
				delete(e.groups, r)
			}
		}
	}
	e.wire = e.wire[:0]
	bounds := make([]int, 0, len(e.order)+1)
	for _, r := range e.order {
		bounds = append(bounds, len(e.wire))
		e.spansB = e.spansB[:0]
		for _, i := range e.groups[r] {
			e.span = e.appendSpan(e.span[:0], &batch[i].span)
			e.spansB = protowire.AppendTag(e.spansB, fieldScopeSpansSpans, protowire.BytesType)
			e.spansB = protowire.AppendBytes(e.spansB, e.span)
		}
		e.wire = append(e.wire, r.head...)
		e.wire = protowire.AppendTag(e.wire, fieldResourceSpansScopeSpans, protowire.BytesType)
		schema := len(semconv.SchemaURL)
		e.wire = protowire.AppendVarint(e.wire, uint64(len(e.scope)+len(e.spansB)+protowire.SizeTag(fieldScopeSpansSchemaURL)+protowire.SizeBytes(schema)))
		e.wire = append(e.wire, e.scope...)
		e.wire = append(e.wire, e.spansB...)
		e.wire = protowire.AppendString(protowire.AppendTag(e.wire, fieldScopeSpansSchemaURL, protowire.BytesType), semconv.SchemaURL)
		e.wire = append(e.wire, r.tail...)
	}
	bounds = append(bounds, len(e.wire))
	if cap(e.rs) < len(e.order) {
		e.rs = make([]tracepb.ResourceSpans, len(e.order))
	}
	e.out = e.out[:0]
	for k := range e.order {
		rs := &e.rs[k]
		rs.Reset()
		rs.ProtoReflect().SetUnknown(protoreflect.RawFields(e.wire[bounds[k]:bounds[k+1]:bounds[k+1]]))
		e.out = append(e.out, rs)
	}
	return e.out
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
	pb, err := proto.Marshal(&resourcepb.Resource{Attributes: keyValues(merged.Attributes())})
	if err != nil { // cannot happen for these messages: valid UTF-8 is checked by attribute values' makers
		pb = nil
	}
	r := &encodedResource{head: protowire.AppendBytes(protowire.AppendTag(nil, fieldResourceSpansResource, protowire.BytesType), pb)}
	if url := merged.SchemaURL(); url != "" {
		r.tail = protowire.AppendString(protowire.AppendTag(nil, fieldResourceSpansSchemaURL, protowire.BytesType), url)
	}
	e.resources.Add(key, r)
	return r
}

// appendSpan appends span s as an OTLP Span message, fields in number
// order as protobuf marshals them.
func (e *spanEncoder) appendSpan(b []byte, s *spans.Span) []byte {
	tid, sid := s.TraceID, s.SpanID
	if !tid.IsValid() { // never from the correlator: exported, not lost
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64()|1)
	}
	if !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64()|1)
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
	b = protowire.AppendBytes(protowire.AppendTag(b, fieldSpanTraceID, protowire.BytesType), tid[:])
	b = protowire.AppendBytes(protowire.AppendTag(b, fieldSpanSpanID, protowire.BytesType), sid[:])
	if s.ParentID.IsValid() {
		b = protowire.AppendBytes(protowire.AppendTag(b, fieldSpanParentSpanID, protowire.BytesType), s.ParentID[:])
	}
	b = protowire.AppendString(protowire.AppendTag(b, fieldSpanName, protowire.BytesType), spanName(s))
	b = protowire.AppendVarint(protowire.AppendTag(b, fieldSpanKind, protowire.VarintType), uint64(otlpKind(s.Kind)))
	b = protowire.AppendFixed64(protowire.AppendTag(b, fieldSpanStart, protowire.Fixed64Type), unixNano(s.Start))
	b = protowire.AppendFixed64(protowire.AppendTag(b, fieldSpanEnd, protowire.Fixed64Type), unixNano(s.End))
	e.attrs = spanAttributes(s, e.attrs[:0], &e.addrs)
	for _, a := range e.attrs {
		b = protowire.AppendTag(b, fieldSpanAttributes, protowire.BytesType)
		b = appendKeyValue(b, a)
	}
	// The status message is always present, empty or not, as the SDK's
	// exporter sent it.
	b = protowire.AppendTag(b, fieldSpanStatus, protowire.BytesType)
	if code, desc := spanStatus(s); code == codes.Error {
		size := protowire.SizeTag(fieldStatusMessage) + protowire.SizeBytes(len(desc)) + protowire.SizeTag(fieldStatusCode) + 1
		if desc == "" {
			size = protowire.SizeTag(fieldStatusCode) + 1
		}
		b = protowire.AppendVarint(b, uint64(size))
		if desc != "" {
			b = protowire.AppendString(protowire.AppendTag(b, fieldStatusMessage, protowire.BytesType), desc)
		}
		b = protowire.AppendVarint(protowire.AppendTag(b, fieldStatusCode, protowire.VarintType), uint64(tracepb.Status_STATUS_CODE_ERROR))
	} else {
		b = protowire.AppendVarint(b, 0)
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, fieldSpanFlags, protowire.Fixed32Type), flags)
}

// appendKeyValue appends attribute a as a length-prefixed KeyValue
// message; the value types weft's spans use are written by hand, others
// (none today) through protobuf.
func appendKeyValue(b []byte, a attribute.KeyValue) []byte {
	key := string(a.Key)
	var val []byte
	var scratch [16]byte // a tag and a varint or fixed64
	switch a.Value.Type() {
	case attribute.STRING:
		str := a.Value.AsString()
		vsize := protowire.SizeTag(fieldAnyValueString) + protowire.SizeBytes(len(str))
		size := protowire.SizeTag(fieldKeyValueKey) + protowire.SizeBytes(len(key)) + protowire.SizeTag(fieldKeyValueValue) + protowire.SizeBytes(vsize)
		b = protowire.AppendVarint(b, uint64(size))
		b = protowire.AppendString(protowire.AppendTag(b, fieldKeyValueKey, protowire.BytesType), key)
		b = protowire.AppendVarint(protowire.AppendTag(b, fieldKeyValueValue, protowire.BytesType), uint64(vsize))
		return protowire.AppendString(protowire.AppendTag(b, fieldAnyValueString, protowire.BytesType), str)
	case attribute.INT64:
		val = protowire.AppendVarint(protowire.AppendTag(scratch[:0], fieldAnyValueInt, protowire.VarintType), uint64(a.Value.AsInt64()))
	case attribute.BOOL:
		val = protowire.AppendVarint(protowire.AppendTag(scratch[:0], fieldAnyValueBool, protowire.VarintType), protowire.EncodeBool(a.Value.AsBool()))
	case attribute.FLOAT64:
		val = protowire.AppendFixed64(protowire.AppendTag(scratch[:0], fieldAnyValueDouble, protowire.Fixed64Type), math.Float64bits(a.Value.AsFloat64()))
	default:
		val, _ = proto.Marshal(anyValue(a.Value))
	}
	size := protowire.SizeTag(fieldKeyValueKey) + protowire.SizeBytes(len(key)) + protowire.SizeTag(fieldKeyValueValue) + protowire.SizeBytes(len(val))
	b = protowire.AppendVarint(b, uint64(size))
	b = protowire.AppendString(protowire.AppendTag(b, fieldKeyValueKey, protowire.BytesType), key)
	return protowire.AppendBytes(protowire.AppendTag(b, fieldKeyValueValue, protowire.BytesType), val)
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
