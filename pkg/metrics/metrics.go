// Package metrics exposes weft's self-metrics: a set of named counters
// sampled from the components, logged periodically and served in the
// Prometheus text format.
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
)

// Source reports a snapshot of counters by name.
type Source func() map[string]uint64

// Registry gathers sources.
type Registry struct {
	mu       sync.Mutex
	sources  []Source
	handlers map[string]http.Handler
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

// WriteText writes the snapshot as Prometheus text, names prefixed weft_.
func (r *Registry) WriteText(w io.Writer) error {
	snap := r.Snapshot()
	names := make([]string, 0, len(snap))
	for k := range snap {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, err := fmt.Fprintf(w, "weft_%s %d\n", k, snap[k]); err != nil {
			return err
		}
	}
	return nil
}

// Serve exposes /metrics on addr until the returned server is closed.
func (r *Registry) Serve(addr string) (*http.Server, net.Addr, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_ = r.WriteText(w)
	})
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
