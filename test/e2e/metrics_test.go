package e2e

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/metrics"
)

// scrape reads weft's Prometheus endpoint as Prometheus would.
func scrape(t *testing.T, w *weft) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(w.metrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	mfs, err := metrics.ParseText(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// redRequest is request i of the RED test: every 10th answers 500, odd
// ones wait 300 ms, even ones 110 ms. The delays sit well inside the
// buckets (0.1, 0.25] and (0.25, 0.5] s, whatever the host's load adds.
func redRequest(i int) (status, ms int) {
	status, ms = 200, 110
	if i%10 == 0 {
		status = 500
	}
	if i%2 == 1 {
		ms = 300
	}
	return status, ms
}

// Known traffic gives histograms whose counts, errors and buckets match
// exactly, on the Prometheus endpoint and over OTLP (explicit buckets, or
// exponential ones), under the service name the process gave itself.
func TestREDMetrics(t *testing.T) {
	setup(t)
	for _, histogram := range []string{"explicit", "exponential"} {
		t.Run(histogram, func(t *testing.T) { testRED(t, histogram) })
	}
}

func testRED(t *testing.T, histogram string) {
	rcv := otlptest.Start(t)
	mrcv := otlptest.StartMetrics(t)
	cmd := exec.Command(bins.websr, "-mode=nethttp")
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=checkout")
	srv, addr := startListener(t, cmd)
	w := startWeft(t, rcv, "--pid="+strconv.Itoa(srv.Pid()), "--metrics-exporter=prometheus,otlp",
		"--otlp-metrics-endpoint="+mrcv.Endpoint(), "--metrics-interval=500ms", "--metrics-histogram="+histogram)

	const n = 200
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	client := &http.Client{Timeout: 30 * time.Second}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				status, ms := redRequest(i)
				resp, err := client.Get(fmt.Sprintf("http://%s/sleep?ms=%d&status=%d&n=%d", addr, ms, status, i))
				if err != nil {
					errs <- err
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != status {
					errs <- fmt.Errorf("request %d: %s, want %d", i, resp.Status, status)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, ok := rcv.WaitFor(n, 30*time.Second)
	if !ok {
		t.Fatalf("%d spans, want %d", len(got), n)
	}
	for _, r := range got {
		if r.ServiceName != "checkout" {
			t.Fatalf("span of service %q, want checkout (OTEL_SERVICE_NAME)", r.ServiceName)
		}
	}

	// Per status: count, then the counts of (0.1, 0.25] and (0.25, 0.5].
	want := map[string][3]uint64{"200": {180, 80, 100}, "500": {20, 20, 0}}

	// Prometheus: the spans are exported, so the metrics have them too.
	var series []*dto.Metric
	if m := scrape(t, w)["http_server_request_duration_seconds"]; m != nil {
		series = m.GetMetric()
	}
	if len(series) != len(want) {
		t.Fatalf("%d series, want %d: %v", len(series), len(want), series)
	}
	for _, m := range series {
		l := labelsOf(m)
		status := l["http_response_status_code"]
		w, ok := want[status]
		if !ok || l["service_name"] != "checkout" || l["http_route"] != "/sleep" || l["http_request_method"] != "GET" {
			t.Fatalf("series %v", l)
		}
		if (status == "500") != (l["error_type"] == "500") {
			t.Errorf("status %s with error_type %q", status, l["error_type"])
		}
		cum := map[float64]uint64{}
		for _, b := range m.GetHistogram().GetBucket() {
			cum[b.GetUpperBound()] = b.GetCumulativeCount()
		}
		h := m.GetHistogram()
		if h.GetSampleCount() != w[0] || cum[0.1] != 0 || cum[0.25] != w[1] || cum[0.5] != w[1]+w[2] {
			t.Errorf("status %s: count %d, le 0.1/0.25/0.5: %d/%d/%d, want %d, 0/%d/%d", status, h.GetSampleCount(),
				cum[0.1], cum[0.25], cum[0.5], w[0], w[1], w[1]+w[2])
		}
	}
	if m, _ := w.Metrics(); m["span_metrics_spans"] != n {
		t.Errorf("span_metrics_spans %d, want %d", m["span_metrics_spans"], n)
	}

	// OTLP: the latest cumulative push that has every request.
	deadline := time.Now().Add(15 * time.Second)
	var points []histPoint
	for time.Now().Before(deadline) {
		points = latestHistogram(mrcv, "checkout", "http.server.request.duration", histogram == "exponential")
		var total uint64
		for _, p := range points {
			total += p.count
		}
		if total == n {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(points) != len(want) {
		t.Fatalf("OTLP: %d points, want %d: %v", len(points), len(want), points)
	}
	for _, p := range points {
		w := want[fmt.Sprint(p.attrs["http.response.status_code"])]
		if p.count != w[0] || p.short != w[1] || p.long != w[2] || p.attrs["http.route"] != "/sleep" {
			t.Errorf("OTLP point %v: count %d, %d short, %d long, want %v", p.attrs, p.count, p.short, p.long, w)
		}
	}
}

// histPoint is an OTLP histogram point with its counts of requests of
// 0.0625-0.25 s and 0.25-0.5 s.
type histPoint = struct {
	attrs       map[string]any
	count       uint64
	short, long uint64
}

// latestHistogram returns the points of the last push of metric name for
// service, explicit or exponential.
func latestHistogram(r *otlptest.MetricsReceiver, service, name string, exponential bool) []histPoint {
	var out []histPoint
	for _, rm := range r.Received() {
		if otlptest.Attrs(rm.GetResource().GetAttributes())["service.name"] != service {
			continue
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, m := range sm.GetMetrics() {
				if m.GetName() != name {
					continue
				}
				out = nil
				if exponential {
					for _, p := range m.GetExponentialHistogram().GetDataPoints() {
						out = append(out, expPoint(p))
					}
					continue
				}
				for _, p := range m.GetHistogram().GetDataPoints() {
					hp := histPoint{attrs: otlptest.Attrs(p.GetAttributes()), count: p.GetCount()}
					for i, c := range p.GetBucketCounts() {
						if i == 0 || i >= len(p.GetExplicitBounds()) {
							continue // no lower or no upper bound
						}
						lo, hi := p.GetExplicitBounds()[i-1], p.GetExplicitBounds()[i]
						switch {
						case lo >= 0.0625 && hi <= 0.25:
							hp.short += c
						case lo >= 0.25 && hi <= 0.5:
							hp.long += c
						}
					}
					out = append(out, hp)
				}
			}
		}
	}
	return out
}

// expPoint sorts an exponential point's buckets by their bounds: bucket i
// at scale s is (2^(i·2^-s), 2^((i+1)·2^-s)].
func expPoint(p *metricspb.ExponentialHistogramDataPoint) histPoint {
	hp := histPoint{attrs: otlptest.Attrs(p.GetAttributes()), count: p.GetCount()}
	width := math.Ldexp(1, -int(p.GetScale())) // of a bucket, in log2
	for j, c := range p.GetPositive().GetBucketCounts() {
		lo := float64(p.GetPositive().GetOffset()+int32(j)) * width // log2 of the lower bound
		hi := lo + width
		switch {
		case lo >= -4 && hi <= -2:
			hp.short += c
		case lo >= -2 && hi <= -1:
			hp.long += c
		}
	}
	return hp
}

// Two services calling each other, and one calling a peer weft does not
// trace, give exactly the expected edges.
func TestServiceGraph(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	named := func(name string, args ...string) (*proc, string) {
		cmd := exec.Command(bins.websr, args...)
		cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME="+name)
		return startListener(t, cmd)
	}
	back, backAddr := named("back", "-mode=nethttp")
	_, peerAddr := named("peer", "-mode=nethttp") // not traced
	front1, front1Addr := named("front", "-mode=thread", "-downstream="+backAddr, "-downstream-path=/hello")
	front2, front2Addr := named("front", "-mode=thread", "-downstream="+peerAddr, "-downstream-path=/hello")
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d,%d", back.Pid(), front1.Pid(), front2.Pid()))

	loadEach(t, func(i int64) string { return fmt.Sprintf("http://%s/call?n=%d", front1Addr, i) }, 60, 4)
	loadEach(t, func(i int64) string { return fmt.Sprintf("http://%s/call?n=%d", front2Addr, i) }, 40, 4)

	type edge struct{ total, failed, serverN, clientN uint64 }
	want := map[string]edge{
		"user>front>virtual_node":             {100, 0, 100, 0},
		"front>back>":                         {60, 0, 60, 60},
		"front>" + peerAddr + ">virtual_node": {40, 0, 0, 40},
	}
	read := func() map[string]edge {
		got := map[string]edge{}
		for name, mf := range scrape(t, w) {
			for _, m := range mf.GetMetric() {
				l := labelsOf(m)
				k := l["client"] + ">" + l["server"] + ">" + l["connection_type"]
				e := got[k]
				switch name {
				case "traces_service_graph_request_total":
					e.total = uint64(m.GetCounter().GetValue())
				case "traces_service_graph_request_failed_total":
					e.failed = uint64(m.GetCounter().GetValue())
				case "traces_service_graph_request_server_seconds":
					e.serverN = m.GetHistogram().GetSampleCount()
				case "traces_service_graph_request_client_seconds":
					e.clientN = m.GetHistogram().GetSampleCount()
				default:
					continue
				}
				got[k] = e
			}
		}
		return got
	}
	// The virtual edge to the peer appears once its client spans have
	// waited 2 s for a server span that never comes.
	var got map[string]edge
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if got = read(); got["front>"+peerAddr+">virtual_node"].total == 40 {
			break
		}
	}
	if len(got) != len(want) {
		t.Errorf("edges %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("edge %s: %+v, want %+v (all: %v)", k, got[k], w, got)
		}
	}
	if m, _ := w.Metrics(); m["service_graph_unpaired_server"] != 0 || m["service_graph_dropped"] != 0 {
		t.Errorf("unpaired %d dropped %d", m["service_graph_unpaired_server"], m["service_graph_dropped"])
	}
}

// 10,000 requests on as many random paths keep a service within its route
// limit: the first routes get series, the rest one overflow series, and
// the overflow count says how many.
func TestRouteLimit(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startServer(t, "-mode=nethttp")
	w := startWeft(t, rcv, "--pid="+strconv.Itoa(srv.Pid()), "--metrics-route-limit=50")
	const n = 10000
	r := rand.New(rand.NewPCG(5, 6))
	paths := make([]string, n+1)
	for i := 1; i <= n; i++ {
		// Letters only: no segment looks like an id, so every path is a
		// route of its own.
		b := make([]byte, 12)
		for j := range b {
			b[j] = byte('a' + r.IntN(26))
		}
		paths[i] = "/work/" + string(b)
	}
	loadEach(t, func(i int64) string { return "http://" + addr + paths[i] }, n, 16)
	if _, ok := rcv.WaitFor(n, 60*time.Second); !ok {
		t.Fatalf("%d spans, want %d", len(rcv.Spans()), n)
	}
	routes := map[string]bool{}
	var routed, overflow uint64
	for _, m := range scrape(t, w)["http_server_request_duration_seconds"].GetMetric() {
		l := labelsOf(m)
		switch {
		case l["otel_metric_overflow"] == "true":
			overflow += m.GetHistogram().GetSampleCount()
		case l["http_route"] != "":
			routes[l["http_route"]] = true
			routed += m.GetHistogram().GetSampleCount()
		default:
			t.Errorf("series with neither route nor overflow: %v", l)
		}
	}
	counted, _ := w.Metrics()
	if len(routes) != 50 || routed != 50 || overflow != n-50 || counted["span_metrics_routes_overflow"] != n-50 {
		t.Errorf("%d routes with %d requests, overflow %d (counted %d), want 50, 50, %d", len(routes), routed, overflow,
			counted["span_metrics_routes_overflow"], n-50)
	}
}
