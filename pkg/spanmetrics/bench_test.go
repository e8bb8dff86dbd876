package spanmetrics

import (
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/spans"
)

// BenchmarkObserve is the cost span metrics add per span: a server span
// and a client span of one call, paired, on a service with 100 routes.
func BenchmarkObserve(b *testing.B) {
	a, _ := newTestAggregator(Options{RED: true, ServiceGraph: true}, map[uint32]string{1: "front", 2: "back"})
	routes := make([]string, 100)
	for i := range routes {
		routes[i] = fmt.Sprintf("/api/r%d/{id}", i)
	}
	srv := span(spans.KindServer, 2, "GET", "", 200, 3*time.Millisecond)
	srv.ParentRemote = true
	cl := span(spans.KindClient, 1, "GET", "", 200, 4*time.Millisecond)
	cl.Remote, cl.Host = netip.MustParseAddrPort("10.0.0.2:8080"), "back:8080"
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := spans.SpanID{byte(i), byte(i >> 8), byte(i >> 16), byte(i >> 24), 1}
		cl.SpanID, srv.ParentID = id, id
		cl.Route, srv.Route = routes[i%100], routes[i%100]
		a.Observe(srv)
		a.Observe(cl)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/span")
}

// BenchmarkMemory1000x100 reports the heap that 1,000 services with 100
// routes each (server spans, two status codes) hold.
func BenchmarkMemory1000x100(b *testing.B) {
	for range b.N {
		names := map[uint32]string{}
		for pid := range uint32(1000) {
			names[pid] = fmt.Sprintf("svc-%d", pid)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a, _ := newTestAggregator(Options{RED: true, ServiceGraph: true}, names)
		for pid := range uint32(1000) {
			for r := range 100 {
				for _, status := range []int{200, 500} {
					a.Observe(span(spans.KindServer, pid, "GET", fmt.Sprintf("/r%d", r), status, time.Millisecond))
				}
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/200000, "B/series")
		runtime.KeepAlive(a)
	}
}
