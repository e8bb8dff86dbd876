// Package metrics serves weft's Prometheus endpoint: its self-metrics (a
// set of named counters sampled from the components, also logged
// periodically) and the OpenTelemetry metrics weft derives from spans.
package metrics

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

// Source reports a snapshot of counters by name.
type Source func() map[string]uint64

// Registry gathers sources.
type Registry struct {
	mu       sync.Mutex
	sources  []Source
	otel     []otelCollector
	handlers map[string]http.Handler
}

// AddOTel serves src's metrics too, each series labelled with the
// resource attributes labels picks.
func (r *Registry) AddOTel(src OTelSource, labels LabelsOf) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.otel = append(r.otel, otelCollector{src: src, labels: labels})
}

// Handle serves h at path on the metrics address too (set before Serve).
func (r *Registry) Handle(path string, h http.Handler) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handlers == nil {
		r.handlers = map[string]http.Handler{}
	}
	r.handlers[path] = h
}

// Add registers a source.
func (r *Registry) Add(s Source) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sources = append(r.sources, s)
}

// Snapshot merges every source.
func (r *Registry) Snapshot() map[string]uint64 {
	r.mu.Lock()
	srcs := append([]Source(nil), r.sources...)
	r.mu.Unlock()
	out := map[string]uint64{}
	for _, s := range srcs {
		for k, v := range s() {
			out[k] = v
		}
	}
	return out
}

// WriteText writes every metric in the Prometheus text format; the
// self-metrics are named weft_<name>.
func (r *Registry) WriteText(w io.Writer) error {
	mfs, err := r.gatherer().Gather()
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if e := enc.Encode(mf); e != nil {
			return e
		}
	}
	return err
}

// gatherer collects the sources as they are when it is called.
func (r *Registry) gatherer() prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(selfCollector{r})
	r.mu.Lock()
	for _, c := range r.otel {
		reg.MustRegister(c)
	}
	r.mu.Unlock()
	return reg
}

// selfCollector renders the self-metrics, untyped: some are counters,
// some gauges, and the sources do not say which.
type selfCollector struct{ r *Registry }

func (selfCollector) Describe(chan<- *prometheus.Desc) {}

func (c selfCollector) Collect(ch chan<- prometheus.Metric) {
	for k, v := range c.r.Snapshot() {
		desc := prometheus.NewDesc("weft_"+sanitize(k), "weft self-metric "+k+".", nil, nil)
		m, err := prometheus.NewConstMetric(desc, prometheus.UntypedValue, float64(v))
		sendOrInvalid(ch, desc, m, err)
	}
}

// Serve exposes /metrics on addr until the returned server is closed.
func (r *Registry) Serve(addr string) (*http.Server, net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(r.gatherer(), promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	// Profiling weft itself, on the same local-only address.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	r.mu.Lock()
	for path, h := range r.handlers {
		mux.Handle(path, h)
	}
	r.mu.Unlock()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			slog.Warn("metrics server stopped", "component", "metrics", "err", err)
		}
	}()
	return srv, ln.Addr(), nil
}

// Log writes the snapshot as one structured log line.
func (r *Registry) Log(l *slog.Logger) {
	snap := r.Snapshot()
	names := make([]string, 0, len(snap))
	for k := range snap {
		names = append(names, k)
	}
	sort.Strings(names)
	args := make([]any, 0, 2*len(names))
	for _, k := range names {
		args = append(args, k, snap[k])
	}
	l.Info("self-metrics", args...)
}
