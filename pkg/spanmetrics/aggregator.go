// Package spanmetrics turns finished spans into RED metrics (request rate,
// errors and duration per service and route, following OpenTelemetry's
// HTTP semantic conventions) and a service graph (requests between
// services, in the form of Tempo's and the Collector's service graphs).
// It sees every span, sampled or not, and keeps only aggregates.
package spanmetrics

import (
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/weftdev/weft/pkg/spans"
)

// Resolver names the process that produced a span; *procinfo.Resolver
// implements it.
type Resolver interface {
	Resolve(pid uint32) (res *resource.Resource, serviceName string)
}

// Options configure an Aggregator.
type Options struct {
	// RED turns on the http.server/client.request.duration and body size
	// histograms.
	RED bool
	// ServiceGraph turns on the traces_service_graph_* metrics.
	ServiceGraph bool
	// RouteLimit bounds the distinct routes of one service; requests on
	// further routes are recorded without a route, marked overflow.
	// Default 100.
	RouteLimit int
	// PairWait is how long a span waits for its other half (the client
	// span of a server span, or the reverse) before it counts as unpaired.
	// Default 2s.
	PairWait time.Duration
	// MaxPending bounds the spans waiting for their other half; beyond it
	// spans are left out of the graph and counted. Default 10000.
	MaxPending int
	// Delta makes CollectOTLP report the change since its last call
	// (CollectPrometheus stays cumulative).
	Delta bool
	// Exponential makes CollectOTLP report base-2 exponential histograms
	// (CollectPrometheus reports the explicit buckets).
	Exponential bool
	// Self is the resource of the service graph's metrics (weft's own).
	Self *resource.Resource
	// Now is the clock; default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.RouteLimit <= 0 {
		o.RouteLimit = 100
	}
	if o.PairWait <= 0 {
		o.PairWait = 2 * time.Second
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 10000
	}
	if o.Self == nil {
		o.Self = resource.Empty()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Stats count what the aggregator did with spans. Safe to read from any
// goroutine.
type Stats struct {
	Spans           atomic.Uint64 // spans observed
	RoutesOverflow  atomic.Uint64 // requests recorded without their route: the service's route limit was reached
	GraphPaired     atomic.Uint64 // client and server spans paired into an edge
	GraphVirtual    atomic.Uint64 // edges to or from a peer weft does not trace ("user", or an address)
	GraphUnpaired   atomic.Uint64 // server spans with a remote parent whose client span never came
	GraphDropped    atomic.Uint64 // spans left out of the graph: too many waiting for their other half
	ServicesTracked atomic.Int64  // services with metrics
}

// Snapshot names the counters for the self-metrics.
func (s *Stats) Snapshot() map[string]uint64 {
	return map[string]uint64{
		"span_metrics_spans":            s.Spans.Load(),
		"span_metrics_routes_overflow":  s.RoutesOverflow.Load(),
		"span_metrics_services":         uint64(s.ServicesTracked.Load()),
		"service_graph_paired":          s.GraphPaired.Load(),
		"service_graph_virtual_edges":   s.GraphVirtual.Load(),
		"service_graph_unpaired_server": s.GraphUnpaired.Load(),
		"service_graph_dropped":         s.GraphDropped.Load(),
	}
}

// Aggregator keeps the metrics. Observe is called from one goroutine (the
// correlator's); the Collect methods from any.
type Aggregator struct {
	opts     Options
	resolver Resolver
	stats    Stats
	start    time.Time

	mu       sync.Mutex
	byRes    map[*resource.Resource]*service
	services map[attribute.Distinct]*service
	graph    graph
	// lastDelta is when a delta CollectOTLP last ran: the start of the
	// next delta interval.
	lastDelta time.Time
}

// maxResources bounds the resource-to-service cache, which grows with
// every process seen; past it the cache starts over.
const maxResources = 4096

// New returns an Aggregator naming services through r.
func New(opts Options, r Resolver) *Aggregator {
	opts.defaults()
	now := opts.Now()
	return &Aggregator{
		opts:      opts,
		resolver:  r,
		start:     now,
		lastDelta: now,
		byRes:     map[*resource.Resource]*service{},
		services:  map[attribute.Distinct]*service{},
		graph:     newGraph(opts),
	}
}

// Stats returns the live counters.
func (a *Aggregator) Stats() *Stats { return &a.stats }

// Observe records one finished span. It keeps nothing of s.
func (a *Aggregator) Observe(s *spans.Span) {
	a.stats.Spans.Add(1)
	res, name := a.resolver.Resolve(s.PID)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.opts.RED {
		a.serviceOf(res).observe(s, a.opts, &a.stats)
	}
	if a.opts.ServiceGraph {
		a.graph.observe(s, name, a.opts.Now(), &a.stats)
	}
}

// serviceOf returns the metrics of the service res belongs to.
func (a *Aggregator) serviceOf(res *resource.Resource) *service {
	if svc, ok := a.byRes[res]; ok {
		return svc
	}
	if len(a.byRes) >= maxResources {
		clear(a.byRes)
	}
	id := metricResource(res)
	svc, ok := a.services[id.Equivalent()]
	if !ok {
		svc = newService(id, a.opts.Now())
		a.services[id.Equivalent()] = svc
		a.stats.ServicesTracked.Add(1)
	}
	a.byRes[res] = svc
	return svc
}
