package spans

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// The semantic-convention values that span exporters and span metrics
// both derive from a span, decided once here so the two never disagree.

// knownMethods are the methods the HTTP semantic conventions name; anything
// else is reported as _OTHER to keep http.request.method low-cardinality.
var knownMethods = map[string]bool{
	"CONNECT": true, "DELETE": true, "GET": true, "HEAD": true, "OPTIONS": true,
	"PATCH": true, "POST": true, "PUT": true, "TRACE": true, "QUERY": true,
}

// MethodOther is http.request.method for a method the conventions do not
// name.
const MethodOther = "_OTHER"

// KnownMethod reports whether m is a method the conventions name.
func KnownMethod(m string) bool { return knownMethods[m] }

const defaultHTTPPort = 80

// ServerAddress is server.address and server.port: the Host header (port
// 80 when it names none), else the socket's server end: the local one for
// a server span, the peer for a client span.
func (s *Span) ServerAddress() (host string, port int, ok bool) {
	if host, port, ok := splitHost(s.Host); ok {
		return host, port, true
	}
	end := s.Local
	if s.Kind == KindClient {
		end = s.Remote
	}
	if !end.IsValid() {
		return "", 0, false
	}
	return AddrString(end.Addr()), int(end.Port()), true
}

// ErrorTypeAttr is error.type: what cut the exchange short, else the
// status code of an error response, else empty.
func (s *Span) ErrorTypeAttr() string {
	if s.ErrorType != "" {
		return ValidUTF8(s.ErrorType)
	}
	if !s.IsError() {
		return ""
	}
	if s.RPCSystem != "" && s.RPCStatus >= 0 {
		return GRPCCodeName(s.RPCStatus)
	}
	return strconv.Itoa(s.StatusCode)
}

var grpcCodes = [...]string{"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
	"UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"}

// GRPCCodeName is the name of a gRPC status code, its number for one
// gRPC does not define.
func GRPCCodeName(code int) string {
	if code >= 0 && code < len(grpcCodes) {
		return grpcCodes[code]
	}
	return strconv.Itoa(code)
}

// splitHost splits a Host header into address and port; without a port the
// scheme's default applies.
func splitHost(h string) (string, int, bool) {
	h = ValidUTF8(strings.TrimSpace(h))
	if h == "" {
		return "", 0, false
	}
	host, portStr, err := net.SplitHostPort(h)
	if err != nil {
		return strings.Trim(h, "[]"), defaultHTTPPort, true
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return host, defaultHTTPPort, true
	}
	return host, port, true
}

// AddrString reports IPv4-mapped IPv6 addresses, which dual-stack sockets
// produce, in their IPv4 form.
func AddrString(a netip.Addr) string { return a.Unmap().String() }

// ValidUTF8 keeps strings captured from the wire exportable: protobuf
// refuses non-UTF-8 strings, which would fail the whole batch.
func ValidUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
