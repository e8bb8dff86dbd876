// Package spans holds the span model shared by the correlator (which builds
// spans from kernel events) and the exporters (which ship them).
package spans

import (
	"encoding/hex"
	"net/netip"
	"time"
)

// Kind is the OpenTelemetry span kind weft produces.
type Kind uint8

const (
	KindServer Kind = iota + 1
	KindClient
)

func (k Kind) String() string {
	switch k {
	case KindServer:
		return "SERVER"
	case KindClient:
		return "CLIENT"
	}
	return "UNSPECIFIED"
}

// TraceID and SpanID are the W3C Trace Context identifiers.
type (
	TraceID [16]byte
	SpanID  [8]byte
)

func (t TraceID) IsValid() bool  { return t != TraceID{} }
func (s SpanID) IsValid() bool   { return s != SpanID{} }
func (t TraceID) String() string { return hex.EncodeToString(t[:]) }
func (s SpanID) String() string  { return hex.EncodeToString(s[:]) }

// Span is one finished HTTP exchange as seen from one process.
type Span struct {
	TraceID  TraceID
	SpanID   SpanID
	ParentID SpanID // zero for a root span
	// ParentRemote is true when the parent came from an incoming
	// traceparent rather than from a span weft built in this process.
	ParentRemote bool
	TraceFlags   byte

	Kind  Kind
	Name  string
	Start time.Time
	End   time.Time

	PID uint32
	TID uint32

	Method     string
	Path       string // without the query string
	Query      string // kept only when configured
	Route      string // low-cardinality form of Path used in the span name
	Host       string // Host header
	UserAgent  string
	Proto      string // "1.0", "1.1" or "2"
	TLS        bool   // seen in clear inside a TLS connection (https)
	StatusCode int    // 0 when no response was seen

	Local  netip.AddrPort // this process's end of the connection
	Remote netip.AddrPort // the peer

	RequestBodySize  int64 // -1 when unknown
	ResponseBodySize int64 // -1 when unknown

	// ErrorType is set when the exchange did not complete normally
	// (for example "timeout" or "connection_closed"), following the
	// semantic conventions' error.type attribute.
	ErrorType string

	// RPC, for a gRPC call ("grpc" in RPCSystem): the service and method
	// from its path, and its status from grpc-status (-1: none came).
	RPCSystem  string
	RPCService string
	RPCMethod  string
	RPCStatus  int
	RPCMessage string // grpc-message

	// Profiled is set when the profiler took CPU samples while the span
	// ran: its profile can be looked up by span id.
	Profiled bool
}

// Scheme is the URL scheme the request was made with: https over TLS.
func (s *Span) Scheme() string {
	if s.TLS {
		return "https"
	}
	return "http"
}

// Duration is End minus Start.
func (s *Span) Duration() time.Duration { return s.End.Sub(s.Start) }

// IsError reports whether the span has the error status under the HTTP
// semantic conventions: 5xx for servers, 4xx and 5xx for clients, or any
// exchange that did not complete.
func (s *Span) IsError() bool {
	if s.ErrorType != "" {
		return true
	}
	if s.RPCSystem != "" && s.RPCStatus >= 0 {
		return rpcError(s.Kind, s.RPCStatus)
	}
	if s.Kind == KindServer {
		return s.StatusCode >= 500
	}
	return s.StatusCode >= 400
}

// rpcError follows the gRPC conventions: a client's call fails with any
// status but OK; a server's only with those that say the server failed
// (UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE,
// DATA_LOSS), not with a caller's mistake such as NOT_FOUND.
func rpcError(k Kind, code int) bool {
	if k == KindClient {
		return code != 0
	}
	switch code {
	case 2, 4, 12, 13, 14, 15:
		return true
	}
	return false
}
