package export

import (
	"maps"
	"net/netip"
	"testing"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"

	"github.com/weftdev/weft/pkg/spans"
)

func attrsOf(s *spans.Span) map[string]any {
	m := map[string]any{}
	for _, kv := range spanAttributes(s, nil, nil) {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func checkAttrs(t *testing.T, got, want map[string]any) {
	t.Helper()
	if !maps.Equal(got, want) {
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s = %#v, want %#v", k, got[k], w)
			}
		}
		for k, g := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("unexpected %s = %#v", k, g)
			}
		}
	}
}

func TestServerAttributes(t *testing.T) {
	checkAttrs(t, attrsOf(serverSpan()), map[string]any{
		"http.request.method":       "GET",
		"url.scheme":                "http",
		"url.path":                  "/api/users/42",
		"url.query":                 "verbose=1",
		"network.protocol.name":     "http",
		"network.protocol.version":  "1.1",
		"http.response.status_code": int64(503),
		"user_agent.original":       "curl/8.5.0",
		"server.address":            "shop.example",
		"server.port":               int64(8080),
		"client.address":            "10.0.0.2",
		"client.port":               int64(51000),
		"network.peer.address":      "10.0.0.2",
		"network.peer.port":         int64(51000),
		"network.local.address":     "10.0.0.1",
		"network.local.port":        int64(8080),
		"http.request.body.size":    int64(0),
		"http.response.body.size":   int64(17),
		"thread.id":                 int64(1240),
		"error.type":                "503",
	})
}

func TestClientAttributes(t *testing.T) {
	checkAttrs(t, attrsOf(clientSpan()), map[string]any{
		"http.request.method":       "POST",
		"url.scheme":                "http",
		"url.path":                  "/v1/charge",
		"url.full":                  "http://10.0.0.9:9000/v1/charge",
		"network.protocol.name":     "http",
		"network.protocol.version":  "1.0",
		"http.response.status_code": int64(201),
		"server.address":            "10.0.0.9",
		"server.port":               int64(9000),
		"network.peer.address":      "10.0.0.9",
		"network.peer.port":         int64(9000),
		"http.request.body.size":    int64(120),
		"thread.id":                 int64(77),
	})
}

func TestAttributeVariants(t *testing.T) {
	cases := []struct {
		name string
		edit func(*spans.Span)
		want map[string]any // subset; nil value means absent
	}{
		{"unknown method", func(s *spans.Span) { s.Method = "PURGE" },
			map[string]any{"http.request.method": "_OTHER", "http.request.method_original": "PURGE"}},
		{"lowercase method is not known", func(s *spans.Span) { s.Method = "get" },
			map[string]any{"http.request.method": "_OTHER", "http.request.method_original": "get"}},
		{"host without port", func(s *spans.Span) { s.Host = "shop.example" },
			map[string]any{"server.address": "shop.example", "server.port": int64(80)}},
		{"ipv6 host", func(s *spans.Span) { s.Host = "[2001:db8::1]:8443" },
			map[string]any{"server.address": "2001:db8::1", "server.port": int64(8443)}},
		{"server without host header", func(s *spans.Span) { s.Host = "" },
			map[string]any{"server.address": "10.0.0.1", "server.port": int64(8080)}},
		{"no response", func(s *spans.Span) { s.StatusCode = 0; s.ErrorType = "timeout"; s.ResponseBodySize = -1 },
			map[string]any{"http.response.status_code": nil, "error.type": "timeout", "http.response.body.size": nil}},
		{"no query", func(s *spans.Span) { s.Query = "" },
			map[string]any{"url.query": nil}},
		{"client 404 is an error", func(s *spans.Span) { s.Kind = spans.KindClient; s.StatusCode = 404 },
			map[string]any{"error.type": "404", "url.full": "http://shop.example:8080/api/users/42?verbose=1", "client.address": nil}},
		{"server 404 is not", func(s *spans.Span) { s.StatusCode = 404 },
			map[string]any{"error.type": nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := serverSpan()
			c.edit(s)
			got := attrsOf(s)
			for k, w := range c.want {
				g, ok := got[k]
				if w == nil && ok {
					t.Errorf("%s = %#v, want absent", k, g)
				} else if w != nil && g != w {
					t.Errorf("%s = %#v, want %#v", k, g, w)
				}
			}
		})
	}
}

func TestStatusAndName(t *testing.T) {
	s := serverSpan()
	if code, desc := spanStatus(s); code != codes.Error || desc != "" {
		t.Errorf("503: status %v %q, want Error with empty description", code, desc)
	}
	s.StatusCode, s.ErrorType = 0, "connection_closed"
	if code, desc := spanStatus(s); code != codes.Error || desc != "connection_closed" {
		t.Errorf("aborted: status %v %q", code, desc)
	}
	s.StatusCode, s.ErrorType = 200, ""
	if code, _ := spanStatus(s); code != codes.Unset {
		t.Errorf("200: status %v, want Unset", code)
	}
	s.Name = ""
	if n := spanName(s); n != "GET" {
		t.Errorf("fallback name %q", n)
	}
	s.Method = "BREW"
	if n := spanName(s); n != "HTTP" {
		t.Errorf("fallback name %q", n)
	}
}

func TestAttributesAreUTF8(t *testing.T) {
	s := serverSpan()
	s.Path, s.UserAgent, s.Host, s.Method = "/\xff", "agent\xfe", "h\xc0st", "G\xffT"
	for _, kv := range spanAttributes(s, nil, nil) {
		if kv.Value.Type() == attribute.STRING && !utf8.ValidString(kv.Value.AsString()) {
			t.Errorf("%s is not UTF-8: %q", kv.Key, kv.Value.AsString())
		}
	}
	if got := attrsOf(&spans.Span{Kind: spans.KindServer, Remote: netip.AddrPort{}}); got["client.address"] != nil {
		t.Errorf("invalid remote produced client.address %v", got["client.address"])
	}
}

// A gRPC call carries the RPC attributes, not the HTTP ones; its status
// follows gRPC's code, described by grpc-message.
func TestGRPCAttributes(t *testing.T) {
	s := &spans.Span{
		Kind: spans.KindClient, Method: "POST", Path: "/pkg.Store/Get", Host: "store:9090", Proto: "2",
		StatusCode: 200, Remote: netip.MustParseAddrPort("10.0.0.2:9090"), RequestBodySize: 12, ResponseBodySize: 0,
		RPCSystem: "grpc", RPCService: "pkg.Store", RPCMethod: "Get", RPCStatus: 5, RPCMessage: "no key",
	}
	checkAttrs(t, attrsOf(s), map[string]any{
		"rpc.system":               "grpc",
		"rpc.service":              "pkg.Store",
		"rpc.method":               "Get",
		"rpc.grpc.status_code":     int64(5),
		"network.protocol.name":    "http",
		"network.protocol.version": "2",
		"server.address":           "store",
		"server.port":              int64(9090),
		"network.peer.address":     "10.0.0.2",
		"network.peer.port":        int64(9090),
		"error.type":               "NOT_FOUND",
	})
	if code, desc := spanStatus(s); code != codes.Error || desc != "no key" {
		t.Errorf("client NOT_FOUND status %v %q, want Error \"no key\"", code, desc)
	}
	s.Kind = spans.KindServer // NOT_FOUND is the caller's error, not the server's
	if code, _ := spanStatus(s); code != codes.Unset {
		t.Errorf("server NOT_FOUND status %v, want Unset", code)
	}
	s.RPCStatus = 13
	if code, _ := spanStatus(s); code != codes.Error {
		t.Errorf("server INTERNAL status %v, want Error", code)
	}
}
