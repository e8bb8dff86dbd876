package export

import (
	"net/netip"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/weftdev/weft/pkg/spans"
)

// spanAttributes appends to attrs a weft span's attributes under the
// stable HTTP semantic conventions, or, for a gRPC call, the RPC ones.
func spanAttributes(s *spans.Span, attrs []attribute.KeyValue, names *addrNames) []attribute.KeyValue {
	rpc := s.RPCSystem != ""
	if rpc {
		attrs = rpcAttributes(s, attrs)
	} else {
		attrs = httpAttributes(s, attrs)
	}
	attrs = addressAttributes(s, attrs, names)
	if !rpc {
		attrs = httpTailAttributes(s, attrs)
	}
	return processAttributes(s, attrs)
}

// The RPC attributes of the RPC conventions that gRPC instrumentations
// and OBI emit (semantic conventions 1.26, whose RPC part later versions
// rework while it is still in development).
const (
	rpcSystemKey         = attribute.Key("rpc.system")
	rpcServiceKey        = attribute.Key("rpc.service")
	rpcMethodKey         = attribute.Key("rpc.method")
	rpcGRPCStatusCodeKey = attribute.Key("rpc.grpc.status_code")
)

func rpcAttributes(s *spans.Span, attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, rpcSystemKey.String(validUTF8(s.RPCSystem)))
	if s.RPCService != "" {
		attrs = append(attrs, rpcServiceKey.String(validUTF8(s.RPCService)), rpcMethodKey.String(validUTF8(s.RPCMethod)))
	}
	if s.RPCStatus >= 0 {
		attrs = append(attrs, rpcGRPCStatusCodeKey.Int(s.RPCStatus))
	}
	return append(attrs, semconv.NetworkProtocolName("http"), semconv.NetworkProtocolVersion(s.Proto))
}

func httpAttributes(s *spans.Span, attrs []attribute.KeyValue) []attribute.KeyValue {
	if s.Method != "" {
		if spans.KnownMethod(s.Method) {
			attrs = append(attrs, semconv.HTTPRequestMethodKey.String(s.Method))
		} else {
			attrs = append(attrs, semconv.HTTPRequestMethodOther, semconv.HTTPRequestMethodOriginal(validUTF8(s.Method)))
		}
	}
	attrs = append(attrs,
		semconv.URLScheme(s.Scheme()),
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
	return attrs
}

// httpTailAttributes follow the addresses, in the order weft always
// exported them.
func httpTailAttributes(s *spans.Span, attrs []attribute.KeyValue) []attribute.KeyValue {
	if s.Kind == spans.KindClient {
		authority := validUTF8(s.Host)
		if strings.TrimSpace(s.Host) == "" && s.Remote.IsValid() {
			authority = netip.AddrPortFrom(s.Remote.Addr().Unmap(), s.Remote.Port()).String()
		}
		attrs = append(attrs, semconv.URLFull(urlFull(s.Scheme(), authority, s.Path, s.Query)))
	}
	if s.RequestBodySize >= 0 {
		attrs = append(attrs, semconv.HTTPRequestBodySize(int(s.RequestBodySize)))
	}
	if s.ResponseBodySize >= 0 {
		attrs = append(attrs, semconv.HTTPResponseBodySize(int(s.ResponseBodySize)))
	}
	return attrs
}

// addressAttributes are the attributes of the connection and the process,
// the same for HTTP and RPC.
func addressAttributes(s *spans.Span, attrs []attribute.KeyValue, names *addrNames) []attribute.KeyValue {
	host, port, hostOK := s.ServerAddress()
	if hostOK {
		attrs = append(attrs, semconv.ServerAddress(host), semconv.ServerPort(port))
	}
	switch s.Kind {
	case spans.KindServer:
		if s.Remote.IsValid() {
			attrs = append(attrs, semconv.ClientAddress(names.of(s.Remote.Addr())), semconv.ClientPort(int(s.Remote.Port())))
		}
		attrs = names.appendAddrPort(attrs, s.Remote, semconv.NetworkPeerAddress, semconv.NetworkPeerPort)
		attrs = names.appendAddrPort(attrs, s.Local, semconv.NetworkLocalAddress, semconv.NetworkLocalPort)
	case spans.KindClient:
		attrs = names.appendAddrPort(attrs, s.Remote, semconv.NetworkPeerAddress, semconv.NetworkPeerPort)
	}
	return attrs
}

// processAttributes close every span's list.
func processAttributes(s *spans.Span, attrs []attribute.KeyValue) []attribute.KeyValue {
	if s.TID != 0 {
		attrs = append(attrs, semconv.ThreadID(int(s.TID)))
	}
	if et := s.ErrorTypeAttr(); et != "" {
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

// spanStatus follows the HTTP conventions: the description stays empty for
// status-code errors, which error.type and the status code already explain.
func spanStatus(s *spans.Span) (codes.Code, string) {
	if !s.IsError() {
		return codes.Unset, ""
	}
	if s.ErrorType == "" && s.RPCMessage != "" {
		return codes.Error, validUTF8(s.RPCMessage) // gRPC's own description
	}
	return codes.Error, validUTF8(s.ErrorType)
}

// spanName falls back to the conventions' "{method}" or "HTTP" when the
// correlator left the name empty.
func spanName(s *spans.Span) string {
	switch {
	case s.Name != "":
		return validUTF8(s.Name)
	case spans.KnownMethod(s.Method):
		return s.Method
	}
	return "HTTP"
}

func urlFull(scheme, authority, path, query string) string {
	u := scheme + "://" + authority + validUTF8(path)
	if query != "" {
		u += "?" + validUTF8(query)
	}
	return u
}

// addrNames remembers the text of the addresses spans carry: a host's
// spans name few of them, and formatting one allocates. The zero value
// and nil are ready; not safe for concurrent use.
type addrNames struct {
	names map[netip.Addr]string
}

// maxAddrNames bounds the addresses remembered; past it they start over.
const maxAddrNames = 4096

func (n *addrNames) of(a netip.Addr) string {
	if n == nil {
		return spans.AddrString(a)
	}
	if s, ok := n.names[a]; ok {
		return s
	}
	if n.names == nil || len(n.names) >= maxAddrNames {
		n.names = make(map[netip.Addr]string)
	}
	s := spans.AddrString(a)
	n.names[a] = s
	return s
}

func (n *addrNames) appendAddrPort(attrs []attribute.KeyValue, ap netip.AddrPort, addr func(string) attribute.KeyValue, port func(int) attribute.KeyValue) []attribute.KeyValue {
	if !ap.IsValid() {
		return attrs
	}
	return append(attrs, addr(n.of(ap.Addr())), port(int(ap.Port())))
}

func validUTF8(s string) string { return spans.ValidUTF8(s) }
