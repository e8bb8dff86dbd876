package spanmetrics

import (
	"time"

	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/weftdev/weft/pkg/spans"
)

// redKey is one series of the RED histograms: the attributes the HTTP
// semantic conventions give http.server.request.duration and
// http.client.request.duration. No client address or port: they would
// make a series per connection.
type redKey struct {
	kind      spans.Kind
	method    string
	status    int    // 0: no response
	route     string // http.route (server) or url.template (client)
	overflow  bool   // the route was dropped: the service's limit was reached
	address   string // server.address, client spans only
	port      int    // server.port, client spans only
	errorType string
	proto     string // network.protocol.version
	scheme    string // url.scheme
}

// redSeries are the histograms of one series; the body sizes' only once
// a size is known (many requests have none). since holds what changed
// since the last delta collection (delta temporality only).
type redSeries struct {
	start             time.Time
	exponential       bool
	duration          dist
	reqBody, respBody *dist
	since             *redSeries
}

func newRedSeries(start time.Time, delta, exponential bool) *redSeries {
	r := &redSeries{start: start, exponential: exponential, duration: newDist(DurationBounds, exponential)}
	if delta {
		r.since = newRedSeries(start, false, exponential)
	}
	return r
}

func (r *redSeries) observe(s *spans.Span) {
	r.duration.observe(DurationBounds, s.Duration().Seconds())
	if s.RequestBodySize >= 0 {
		r.observeSize(&r.reqBody, s.RequestBodySize)
	}
	if s.ResponseBodySize >= 0 {
		r.observeSize(&r.respBody, s.ResponseBodySize)
	}
	if r.since != nil {
		r.since.observe(s)
	}
}

// service holds the RED series of one service.
type service struct {
	res    *resource.Resource
	start  time.Time
	routes map[string]struct{}
	series map[redKey]*redSeries
}

func newService(res *resource.Resource, now time.Time) *service {
	return &service{res: res, start: now, routes: map[string]struct{}{}, series: map[redKey]*redSeries{}}
}

func (svc *service) observe(s *spans.Span, opts Options, stats *Stats) {
	k := redKey{kind: s.Kind, status: s.StatusCode, proto: s.Proto, errorType: s.ErrorTypeAttr(), scheme: s.Scheme()}
	switch {
	case s.Method == "":
	case spans.KnownMethod(s.Method):
		k.method = s.Method
	default:
		k.method = spans.MethodOther
	}
	k.route = spans.ValidUTF8(s.Route)
	if _, ok := svc.routes[k.route]; !ok && k.route != "" {
		if len(svc.routes) < opts.RouteLimit {
			svc.routes[k.route] = struct{}{}
		} else {
			k.route, k.overflow = "", true
			stats.RoutesOverflow.Add(1)
		}
	}
	if s.Kind == spans.KindClient {
		k.address, k.port, _ = s.ServerAddress()
	}
	r, ok := svc.series[k]
	if !ok {
		r = newRedSeries(opts.Now(), opts.Delta, opts.Exponential)
		svc.series[k] = r
	}
	r.observe(s)
}

func (r *redSeries) observeSize(d **dist, size int64) {
	if *d == nil {
		nd := newDist(SizeBounds, r.exponential)
		*d = &nd
	}
	(*d).observe(SizeBounds, float64(size))
}

func (r *redSeries) reset() {
	r.duration.reset()
	for _, d := range []*dist{r.reqBody, r.respBody} {
		if d != nil {
			d.reset()
		}
	}
}
