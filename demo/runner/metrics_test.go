package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func serveText(t *testing.T, text string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, text) }))
	t.Cleanup(srv.Close)
	return srv.URL
}

const redBefore = `# TYPE http_server_request_duration_seconds histogram
http_server_request_duration_seconds_bucket{service_name="frontend",http_route="/direct",le="0.1"} 1
http_server_request_duration_seconds_bucket{service_name="frontend",http_route="/direct",le="+Inf"} 1
http_server_request_duration_seconds_sum{service_name="frontend",http_route="/direct"} 0.05
http_server_request_duration_seconds_count{service_name="frontend",http_route="/direct"} 1
# TYPE traces_service_graph_request_total counter
traces_service_graph_request_total{client="frontend",server="backend"} 1
`

const redAfter = `# TYPE http_server_request_duration_seconds histogram
http_server_request_duration_seconds_bucket{service_name="frontend",http_route="/direct",le="0.1"} 3
http_server_request_duration_seconds_bucket{service_name="frontend",http_route="/direct",le="+Inf"} 3
http_server_request_duration_seconds_sum{service_name="frontend",http_route="/direct"} 0.15
http_server_request_duration_seconds_count{service_name="frontend",http_route="/direct"} 3
http_server_request_duration_seconds_bucket{service_name="backend",http_route="/work",http_response_status_code="200",le="0.1"} 2
http_server_request_duration_seconds_bucket{service_name="backend",http_route="/work",http_response_status_code="200",le="+Inf"} 2
http_server_request_duration_seconds_sum{service_name="backend",http_route="/work",http_response_status_code="200"} 0.02
http_server_request_duration_seconds_count{service_name="backend",http_route="/work",http_response_status_code="200"} 2
# TYPE traces_service_graph_request_total counter
traces_service_graph_request_total{client="frontend",server="backend"} 3
traces_service_graph_request_total{client="user",server="frontend",connection_type="virtual_node"} 2
`

func TestREDOfARun(t *testing.T) {
	ctx := context.Background()
	before, err := scrapeRED(ctx, serveText(t, redBefore))
	if err != nil {
		t.Fatal(err)
	}
	after, err := scrapeRED(ctx, serveText(t, redAfter))
	if err != nil {
		t.Fatal(err)
	}
	run := after.since(before)
	groups := []group{{ep: endpoint{service: "frontend", path: "/direct", calls: 1}, reqs: make([]request, 2)}}
	if d := run.compare(expectedRED(groups)); len(d) != 0 {
		t.Errorf("an exact run differs: %v", d)
	}
	if p := run.routes["frontend /direct"].p95(); p != 0.1 {
		t.Errorf("p95 bound %v", p)
	}
	// One request more than the metrics saw, and a call fewer.
	groups[0].reqs = make([]request, 3)
	d := strings.Join(run.compare(expectedRED(groups)), "\n")
	for _, want := range []string{"frontend /direct: 2 requests in the metrics, 3 sent", "edge frontend → backend: 2 in the service graph, want 3"} {
		if !strings.Contains(d, want) {
			t.Errorf("missing %q in:\n%s", want, d)
		}
	}
}
