package correlate

import (
	"testing"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/spans"
)

// keptAlive drives server exchanges on one kept-alive connection: a
// request read and its response written, each call one span.
func keptAlive(emit func(*spans.Span)) func() {
	c := New(Options{Clock: fixedClock(epoch)}, emit)
	req := []byte("GET /hello HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\n\r\n")
	resp := []byte("HTTP/1.1 200 OK\r\nDate: Wed, 02 Dec 2026 22:00:00 GMT\r\nContent-Length: 5\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nhello")
	in := event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress,
		Bytes: uint32(len(req)), Payload: req, Local: srvAddr, Remote: cliAddr}
	out := in
	out.Dir, out.Bytes, out.Payload = event.Egress, uint32(len(resp)), resp
	ts := uint64(1)
	return func() {
		in.Time, out.Time = ts, ts+ms
		c.Handle(&in)
		c.Handle(&out)
		ts += 2 * ms
	}
}

// BenchmarkServerExchange is the correlator's share of one server span.
func BenchmarkServerExchange(b *testing.B) {
	var n int
	exchange := keptAlive(func(*spans.Span) { n++ })
	b.ReportAllocs()
	for b.Loop() {
		exchange()
	}
	if n != b.N {
		b.Fatalf("%d spans for %d exchanges", n, b.N)
	}
}

// Two allocations per span remain: the request's retained head fields
// (one string for method, target, host and user agent) and the span name.
// Exchanges and their queues are reused.
func TestServerExchangeAllocations(t *testing.T) {
	names := make([]string, 0, 200)
	exchange := keptAlive(func(s *spans.Span) { names = append(names, s.Name) })
	exchange()
	if n := testing.AllocsPerRun(100, exchange); n != 2 {
		t.Errorf("%v allocations per server exchange, want 2", n)
	}
	// AllocsPerRun runs it once more to warm up.
	if len(names) != 102 || names[0] != "GET /hello" || names[101] != "GET /hello" {
		t.Errorf("spans %d, names %q ... %q", len(names), names[0], names[len(names)-1])
	}
}
