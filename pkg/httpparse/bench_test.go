package httpparse

import (
	"strings"
	"testing"
)

const (
	benchRequest = "GET /api/v1/users/12345/orders?status=open&limit=20 HTTP/1.1\r\n" +
		"Host: api.example.com\r\n" +
		"User-Agent: Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/128.0\r\n" +
		"Accept: application/json\r\n" +
		"Accept-Encoding: gzip, deflate\r\n" +
		"traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n" +
		"Connection: keep-alive\r\n\r\n"
	benchResponseHead = "HTTP/1.1 200 OK\r\n" +
		"Content-Type: application/json; charset=utf-8\r\n" +
		"Content-Length: 120\r\n" +
		"Date: Sat, 29 Nov 2025 11:54:00 GMT\r\n" +
		"Server: nginx/1.27.0\r\n" +
		"Cache-Control: no-store\r\n\r\n"
)

var benchResponse = benchResponseHead + strings.Repeat("x", 120)

func benchFeed(b *testing.B, mode Mode, msg string) {
	data := []byte(msg)
	p := NewParser(mode)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := range b.N {
		if ev := p.Feed(data, len(data), uint64(i+1)); len(ev) != 1 || !ev[0].Complete {
			b.Fatalf("events %+v", ev)
		}
	}
}

func BenchmarkParseRequest(b *testing.B)  { benchFeed(b, ModeRequest, benchRequest) }
func BenchmarkParseResponse(b *testing.B) { benchFeed(b, ModeResponse, benchResponse) }

func BenchmarkParseChunkedResponse(b *testing.B) {
	benchFeed(b, ModeResponse, chunkedResp+"78\r\n"+strings.Repeat("x", 120)+"\r\n0\r\n\r\n")
}

// BenchmarkParseSplitRequest measures the buffered path: a head in 3 segments.
func BenchmarkParseSplitRequest(b *testing.B) {
	data := []byte(benchRequest)
	parts := [][]byte{data[:100], data[100:200], data[200:]}
	p := NewParser(ModeRequest)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := range b.N {
		for _, part := range parts {
			p.Feed(part, len(part), uint64(i+1))
		}
	}
}

func BenchmarkNotHTTP(b *testing.B) {
	tls := []byte(nonHTTP[1].data)
	p := NewParser(ModeDetect)
	b.ReportAllocs()
	for i := range b.N {
		p.Feed(tls, 4096, uint64(i+1))
	}
}
