package export

import (
	"net"
	"net/netip"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/weftdev/weft/pkg/spans"
)

// knownMethods are the methods the HTTP semantic conventions name; anything
// else is reported as _OTHER to keep http.request.method low-cardinality.
var knownMethods = map[string]bool{
	"CONNECT": true, "DELETE": true, "GET": true, "HEAD": true, "OPTIONS": true,
	"PATCH": true, "POST": true, "PUT": true, "TRACE": true, "QUERY": true,
}

const defaultHTTPPort = 80

// spanAttributes maps a weft span to the stable HTTP semantic conventions.
func spanAttributes(s *spans.Span) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 24)
	if s.Method != "" {
		if knownMethods[s.Method] {
			attrs = append(attrs, semconv.HTTPRequestMethodKey.String(s.Method))
		} else {
			attrs = append(attrs, semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(validUTF8(s.Method)))
		}
	}
	attrs = append(attrs,
		semconv.URLScheme("http"),
		semconv.URLPath(validUTF8(s.Path)),
		semconv.NetworkProtocolName("http"),
	)
	if s.Query != "" {
		attrs = append(attrs, semconv.URLQuery(validUTF8(s.Query)))
	}
	if s.Proto != "" {
		attrs = append(attrs, semconv.NetworkProtocolVersion(s.Proto))
	}
	if s.StatusCode > 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCode(s.StatusCode))
	}
	if s.UserAgent != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(validUTF8(s.UserAgent)))
	}

	switch s.Kind {
	case spans.KindServer:
		if host, port, ok := splitHost(s.Host); ok {
			attrs = append(attrs, semconv.ServerAddress(host), semconv.ServerPort(port))
		} else if s.Local.IsValid() {
			attrs = append(attrs, semconv.ServerAddress(addrString(s.Local.Addr())), semconv.ServerPort(int(s.Local.Port())))
		}
		if s.Remote.IsValid() {
			attrs = append(attrs, semconv.ClientAddress(addrString(s.Remote.Addr())), semconv.ClientPort(int(s.Remote.Port())))
		}
		attrs = appendAddrPort(attrs, s.Remote, semconv.NetworkPeerAddress, semconv.NetworkPeerPort)
		attrs = appendAddrPort(attrs, s.Local, semconv.NetworkLocalAddress, semconv.NetworkLocalPort)
	case spans.KindClient:
		authority := validUTF8(s.Host)
		if host, port, ok := splitHost(s.Host); ok {
			attrs = append(attrs, semconv.ServerAddress(host), semconv.ServerPort(port))
		} else if s.Remote.IsValid() {
			authority = netip.AddrPortFrom(s.Remote.Addr().Unmap(), s.Remote.Port()).String()
			attrs = append(attrs, semconv.ServerAddress(addrString(s.Remote.Addr())), semconv.ServerPort(int(s.Remote.Port())))
		}
		attrs = appendAddrPort(attrs, s.Remote, semconv.NetworkPeerAddress, semconv.NetworkPeerPort)
		attrs = append(attrs, semconv.URLFull(urlFull(authority, s.Path, s.Query)))
	}

	if s.RequestBodySize >= 0 {
		attrs = append(attrs, semconv.HTTPRequestBodySize(int(s.RequestBodySize)))
	}
	if s.ResponseBodySize >= 0 {
		attrs = append(attrs, semconv.HTTPResponseBodySize(int(s.ResponseBodySize)))
	}
	if s.TID != 0 {
		attrs = append(attrs, semconv.ThreadID(int(s.TID)))
	}
	if et := errorType(s); et != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(et))
	}
	if s.Profiled {
		// Grafana's traces-to-profiles link: the pprof samples of this
		// span carry span_id = this value.
		attrs = append(attrs, attribute.String(ProfileIDKey, s.SpanID.String()))
	}
	return attrs
}

// ProfileIDKey is the attribute of spans that have CPU samples, named as
// Grafana (Pyroscope) expects it.
const ProfileIDKey = "pyroscope.profile.id"

func errorType(s *spans.Span) string {
	if s.ErrorType != "" {
		return validUTF8(s.ErrorType)
	}
	if s.IsError() {
		return strconv.Itoa(s.StatusCode)
	}
	return ""
}

// spanStatus follows the HTTP conventions: the description stays empty for
// status-code errors, which error.type and the status code already explain.
func spanStatus(s *spans.Span) (codes.Code, string) {
	if !s.IsError() {
		return codes.Unset, ""
	}
	return codes.Error, validUTF8(s.ErrorType)
}

func spanKind(k spans.Kind) trace.SpanKind {
	switch k {
	case spans.KindServer:
		return trace.SpanKindServer
	case spans.KindClient:
		return trace.SpanKindClient
	}
	return trace.SpanKindInternal
}

// spanName falls back to the conventions' "{method}" or "HTTP" when the
// correlator left the name empty.
func spanName(s *spans.Span) string {
	switch {
	case s.Name != "":
		return validUTF8(s.Name)
	case knownMethods[s.Method]:
		return s.Method
	}
	return "HTTP"
}

// splitHost splits a Host header into address and port; without a port the
// scheme's default applies.
func splitHost(h string) (string, int, bool) {
	h = validUTF8(strings.TrimSpace(h))
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

func urlFull(authority, path, query string) string {
	u := "http://" + authority + validUTF8(path)
	if query != "" {
		u += "?" + validUTF8(query)
	}
	return u
}

// addrString reports IPv4-mapped IPv6 addresses, which dual-stack sockets
// produce, in their IPv4 form.
func addrString(a netip.Addr) string { return a.Unmap().String() }

func appendAddrPort(attrs []attribute.KeyValue, ap netip.AddrPort, addr func(string) attribute.KeyValue, port func(int) attribute.KeyValue) []attribute.KeyValue {
	if !ap.IsValid() {
		return attrs
	}
	return append(attrs, addr(addrString(ap.Addr())), port(int(ap.Port())))
}

// validUTF8 keeps strings captured from the wire exportable: protobuf
// refuses non-UTF-8 strings, which would fail the whole batch.
func validUTF8(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
