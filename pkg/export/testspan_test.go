package export

import (
	"net/netip"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/weftdev/weft/pkg/spans"
)

var testStart = time.Date(2026, 3, 14, 12, 3, 4, 567_000_000, time.UTC)

// serverSpan is a fully populated server span with a remote parent.
func serverSpan() *spans.Span {
	return &spans.Span{
		TraceID:          spans.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36},
		SpanID:           spans.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7},
		ParentID:         spans.SpanID{0x53, 0x99, 0x5c, 0x3f, 0x42, 0xcd, 0x8a, 0xd8},
		ParentRemote:     true,
		TraceFlags:       1,
		Kind:             spans.KindServer,
		Name:             "GET /api/users/{id}",
		Start:            testStart,
		End:              testStart.Add(12300 * time.Microsecond),
		PID:              1234,
		TID:              1240,
		Method:           "GET",
		Path:             "/api/users/42",
		Query:            "verbose=1",
		Host:             "shop.example:8080",
		UserAgent:        "curl/8.5.0",
		Proto:            "1.1",
		StatusCode:       503,
		Local:            netip.MustParseAddrPort("10.0.0.1:8080"),
		Remote:           netip.MustParseAddrPort("[::ffff:10.0.0.2]:51000"),
		RequestBodySize:  0,
		ResponseBodySize: 17,
	}
}

// clientSpan is a root client span without a Host header.
func clientSpan() *spans.Span {
	return &spans.Span{
		TraceID:          spans.TraceID{0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10},
		SpanID:           spans.SpanID{0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18},
		Kind:             spans.KindClient,
		Name:             "POST",
		Start:            testStart,
		End:              testStart.Add(850 * time.Microsecond),
		PID:              77,
		TID:              77,
		Method:           "POST",
		Path:             "/v1/charge",
		Proto:            "1.0",
		StatusCode:       201,
		Local:            netip.MustParseAddrPort("10.0.0.1:40000"),
		Remote:           netip.MustParseAddrPort("10.0.0.9:9000"),
		RequestBodySize:  120,
		ResponseBodySize: -1,
	}
}

// fakeResolver names pids from a map, like procinfo would.
type fakeResolver map[uint32]string

func (f fakeResolver) Resolve(pid uint32) (*resource.Resource, string) {
	name, ok := f[pid]
	if !ok {
		name = "unknown_service"
	}
	return resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(name),
		semconv.ProcessPID(int(pid)),
	), name
}
