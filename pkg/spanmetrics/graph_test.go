package spanmetrics

import (
	"net/netip"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/weftdev/weft/pkg/spans"
)

type edgeCounts struct {
	total, failed, serverN, clientN uint64
}

// edges reads the graph's metrics by "client>server>connection_type".
func edges(t *testing.T, rms []metricdata.ResourceMetrics) map[string]edgeCounts {
	t.Helper()
	out := map[string]edgeCounts{}
	key := func(s attribute.Set) string {
		c, _ := s.Value("client")
		sv, _ := s.Value("server")
		ct, _ := s.Value("connection_type")
		return c.AsString() + ">" + sv.AsString() + ">" + ct.AsString()
	}
	for _, rm := range rms {
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch m.Name {
				case GraphRequests, GraphFailed:
					for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
						e := out[key(dp.Attributes)]
						if m.Name == GraphRequests {
							e.total = uint64(dp.Value)
						} else {
							e.failed = uint64(dp.Value)
						}
						out[key(dp.Attributes)] = e
					}
				case GraphServerSeconds, GraphClientSeconds:
					for _, dp := range m.Data.(metricdata.Histogram[float64]).DataPoints {
						e := out[key(dp.Attributes)]
						if m.Name == GraphServerSeconds {
							e.serverN = dp.Count
						} else {
							e.clientN = dp.Count
						}
						out[key(dp.Attributes)] = e
					}
				}
			}
		}
	}
	return out
}

func callPair(i int, clientPID, serverPID uint32, serverStatus int) (client, server *spans.Span) {
	client = span(spans.KindClient, clientPID, "GET", "/b", serverStatus, 20*time.Millisecond)
	client.SpanID = spans.SpanID{1, byte(i), byte(i >> 8)}
	client.ParentID = spans.SpanID{9, byte(i), byte(i >> 8)}
	client.Remote = netip.MustParseAddrPort("127.0.0.1:9000")
	server = span(spans.KindServer, serverPID, "GET", "/b", serverStatus, 10*time.Millisecond)
	server.SpanID = spans.SpanID{2, byte(i), byte(i >> 8)}
	server.ParentID, server.ParentRemote = client.SpanID, true
	return client, server
}

func TestGraphPairsVirtualNodesAndUnpaired(t *testing.T) {
	a, c := newTestAggregator(Options{ServiceGraph: true}, map[uint32]string{1: "front", 2: "back", 3: "front"})
	for i := range 100 {
		// The incoming request: a root server span in front.
		root := span(spans.KindServer, 1, "GET", "/a", 200, 30*time.Millisecond)
		root.SpanID = spans.SpanID{9, byte(i), byte(i >> 8)}
		a.Observe(root)
		// front -> back, the server's span first or second; every 10th a 500.
		status := 200
		if i%10 == 0 {
			status = 500
		}
		client, server := callPair(i, uint32(1+2*(i%2)), 2, status)
		if i%2 == 0 {
			a.Observe(server)
			a.Observe(client)
		} else {
			a.Observe(client)
			a.Observe(server)
		}
		// front -> a peer weft does not trace.
		ext := span(spans.KindClient, 1, "GET", "/x", 200, 5*time.Millisecond)
		ext.SpanID = spans.SpanID{3, byte(i), byte(i >> 8)}
		ext.Host = "payments.example:8443"
		a.Observe(ext)
		// A server span whose client is on another host.
		far := span(spans.KindServer, 2, "GET", "/c", 200, time.Millisecond)
		far.SpanID, far.ParentID, far.ParentRemote = spans.SpanID{4, byte(i), byte(i >> 8)}, spans.SpanID{5, byte(i), byte(i >> 8)}, true
		a.Observe(far)
	}
	// Before the wait is over, the unpaired halves are not edges yet.
	if got := edges(t, a.CollectPrometheus()); got["front>payments.example:8443>virtual_node"].total != 0 {
		t.Fatalf("virtual edge before the wait ended: %v", got)
	}
	c.t = c.t.Add(3 * time.Second)
	got := edges(t, a.CollectPrometheus())
	want := map[string]edgeCounts{
		"user>front>virtual_node":                  {total: 100, serverN: 100},
		"front>back>":                              {total: 100, failed: 10, serverN: 100, clientN: 100},
		"front>payments.example:8443>virtual_node": {total: 100, clientN: 100},
	}
	if len(got) != len(want) {
		t.Errorf("edges %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: %+v, want %+v", k, got[k], w)
		}
	}
	st := a.Stats()
	if st.GraphPaired.Load() != 100 || st.GraphVirtual.Load() != 200 || st.GraphUnpaired.Load() != 100 || st.GraphDropped.Load() != 0 {
		t.Errorf("stats %v", st.Snapshot())
	}
}

func TestGraphBoundsWaitingSpans(t *testing.T) {
	a, _ := newTestAggregator(Options{ServiceGraph: true, MaxPending: 10}, map[uint32]string{1: "front"})
	for i := range 15 {
		client, _ := callPair(i, 1, 2, 200)
		a.Observe(client)
	}
	if got := a.Stats().GraphDropped.Load(); got != 5 {
		t.Errorf("dropped %d, want 5", got)
	}
}
