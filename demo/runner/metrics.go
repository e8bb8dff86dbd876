package main

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"

	"github.com/weftdev/weft/pkg/metrics"
)

// red is what weft's /metrics says about the demo's services: server
// requests per service and route (with their duration buckets), and the
// service graph's edges.
type red struct {
	routes map[string]*routeStats // "service route"
	edges  map[string]float64     // "client → server"
}

type routeStats struct {
	requests, errors float64
	buckets          map[float64]float64 // cumulative, by upper bound
}

func scrapeRED(ctx context.Context, url string) (red, error) {
	r := red{routes: map[string]*routeStats{}, edges: map[string]float64{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return r, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, fmt.Errorf("read weft's metrics: %w", err)
	}
	defer resp.Body.Close()
	mfs, err := metrics.ParseText(resp.Body)
	if err != nil {
		return r, err
	}
	for _, m := range mfs["http_server_request_duration_seconds"].GetMetric() {
		l := labels(m)
		k := l["service_name"] + " " + l["http_route"]
		st := r.routes[k]
		if st == nil {
			st = &routeStats{buckets: map[float64]float64{}}
			r.routes[k] = st
		}
		h := m.GetHistogram()
		st.requests += float64(h.GetSampleCount())
		if l["error_type"] != "" {
			st.errors += float64(h.GetSampleCount())
		}
		for _, b := range h.GetBucket() {
			st.buckets[b.GetUpperBound()] += float64(b.GetCumulativeCount())
		}
	}
	for _, m := range mfs["traces_service_graph_request_total"].GetMetric() {
		l := labels(m)
		r.edges[l["client"]+" → "+l["server"]] += m.GetCounter().GetValue()
	}
	return r, nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// since is what happened between before and r.
func (r red) since(before red) red {
	out := red{routes: map[string]*routeStats{}, edges: map[string]float64{}}
	for k, st := range r.routes {
		d := &routeStats{requests: st.requests, errors: st.errors, buckets: map[float64]float64{}}
		for le, c := range st.buckets {
			d.buckets[le] = c
		}
		if b := before.routes[k]; b != nil {
			d.requests -= b.requests
			d.errors -= b.errors
			for le, c := range b.buckets {
				d.buckets[le] -= c
			}
		}
		if d.requests > 0 {
			out.routes[k] = d
		}
	}
	for k, n := range r.edges {
		if d := n - before.edges[k]; d > 0 {
			out.edges[k] = d
		}
	}
	return out
}

// p95 is the upper bound of the bucket the 95th percentile falls in.
func (st *routeStats) p95() float64 {
	les := make([]float64, 0, len(st.buckets))
	for le := range st.buckets {
		les = append(les, le)
	}
	sort.Float64s(les)
	for _, le := range les {
		if st.buckets[le] >= 0.95*st.requests {
			return le
		}
	}
	return math.Inf(1)
}

// expectedRED is what the demo's traffic must add to the metrics: each
// group's requests on its service's route, and one edge per backend call
// (from "user" for the demo's own requests, which carry no trace context).
func expectedRED(groups []group) red {
	want := red{routes: map[string]*routeStats{}, edges: map[string]float64{}}
	for _, g := range groups {
		n := float64(len(g.reqs))
		k := g.ep.service + " " + g.ep.path
		if want.routes[k] == nil {
			want.routes[k] = &routeStats{}
		}
		want.routes[k].requests += n
		want.edges["user → "+g.ep.service] += n
		if g.ep.calls > 0 {
			want.routes["backend /work"] = orNew(want.routes["backend /work"])
			want.routes["backend /work"].requests += n * float64(g.ep.calls)
			want.edges[g.ep.service+" → backend"] += n * float64(g.ep.calls)
		}
	}
	return want
}

func orNew(st *routeStats) *routeStats {
	if st == nil {
		return &routeStats{}
	}
	return st
}

// compare lists where got differs from want in requests and edges.
func (got red) compare(want red) []string {
	var diffs []string
	for k, w := range want.routes {
		if g := got.routes[k]; g == nil || g.requests != w.requests {
			diffs = append(diffs, fmt.Sprintf("%s: %v requests in the metrics, %v sent", k, orNew(g).requests, w.requests))
		}
	}
	for k, g := range got.routes {
		if want.routes[k] == nil {
			diffs = append(diffs, fmt.Sprintf("%s: %v requests in the metrics, none sent", k, g.requests))
		}
	}
	for k, w := range want.edges {
		if got.edges[k] != w {
			diffs = append(diffs, fmt.Sprintf("edge %s: %v in the service graph, want %v", k, got.edges[k], w))
		}
	}
	for k, g := range got.edges {
		if _, ok := want.edges[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("edge %s: %v in the service graph, want none", k, g))
		}
	}
	sort.Strings(diffs)
	return diffs
}

// print shows the run's RED metrics and service graph.
func (r red) print() {
	fmt.Printf("\n━━ RED metrics and service graph (weft's /metrics, this run's requests)\n")
	keys := make([]string, 0, len(r.routes))
	for k := range r.routes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("   %-34s %8s %7s %9s\n", "service route", "requests", "errors", "p95 ≤")
	for _, k := range keys {
		st := r.routes[k]
		fmt.Printf("   %-34s %8.0f %7.0f %8.3gs\n", k, st.requests, st.errors, st.p95())
	}
	edges := make([]string, 0, len(r.edges))
	for k := range r.edges {
		edges = append(edges, k)
	}
	sort.Strings(edges)
	fmt.Printf("   service graph:\n")
	for _, k := range edges {
		fmt.Printf("     %-32s %8.0f requests\n", k, r.edges[k])
	}
}
