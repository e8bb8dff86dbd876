package agent

import (
	"context"
	"log/slog"
	"os"

	"github.com/weftdev/weft/pkg/config"
	"github.com/weftdev/weft/pkg/export"
	"github.com/weftdev/weft/pkg/metrics"
	"github.com/weftdev/weft/pkg/procinfo"
	"github.com/weftdev/weft/pkg/spanmetrics"
	"github.com/weftdev/weft/pkg/spans"
)

// spanMetrics are the metrics derived from spans and their exporters.
type spanMetrics struct {
	agg    *spanmetrics.Aggregator
	pusher *export.MetricPusher
}

// startSpanMetrics sets up what cfg asks: nil when no metric exporter
// runs or no metric is on. The Prometheus side is added to reg, which
// must not serve yet.
func startSpanMetrics(ctx context.Context, cfg config.Config, r *procinfo.Resolver, reg *metrics.Registry, version string) (*spanMetrics, error) {
	prom, otlp := cfg.MetricsOn()
	if !prom && !otlp || !cfg.Metrics.RED && !cfg.Metrics.ServiceGraph {
		return nil, nil
	}
	self, _ := r.Resolve(uint32(os.Getpid()))
	agg := spanmetrics.New(spanmetrics.Options{
		RED:          cfg.Metrics.RED,
		ServiceGraph: cfg.Metrics.ServiceGraph,
		RouteLimit:   cfg.Metrics.RouteLimit,
		Delta:        cfg.Metrics.Delta(),
		Exponential:  cfg.Metrics.Exponential(),
		Self:         self,
	}, r)
	sm := &spanMetrics{agg: agg}
	reg.Add(agg.Stats().Snapshot)
	if prom {
		reg.AddOTel(agg.CollectPrometheus, spanmetrics.PrometheusLabels)
	}
	if otlp {
		t, err := cfg.MetricsTarget()
		if err != nil {
			return nil, err
		}
		o := cfg.MetricsOTLP()
		sm.pusher, err = export.NewMetricPusher(ctx, export.OTLPConfig{
			Protocol:    t.Protocol,
			Endpoint:    t.Endpoint,
			Headers:     o.Headers,
			Insecure:    o.Insecure,
			Timeout:     o.Timeout,
			Compression: o.Compression,
			TLS:         otlpTLS(o),
			Version:     version,
		}, cfg.Metrics.Interval, agg.CollectOTLP)
		if err != nil {
			return nil, err
		}
		reg.Add(func() map[string]uint64 {
			s := sm.pusher.Stats()
			return map[string]uint64{"metrics_exports": s.Exports, "metrics_export_failures": s.Failures, "metrics_points_exported": s.Points}
		})
		slog.Info("exporting metrics over OTLP", "component", "export", "protocol", t.Protocol, "why", t.Why,
			"endpoint", t.Endpoint, "compression", o.Compression, "temporality", cfg.Metrics.Temporality, "histograms", cfg.Metrics.Histogram, "interval", cfg.Metrics.Interval)
	}
	return sm, nil
}

// observe is the correlator's hook, nil when metrics are off.
func (sm *spanMetrics) observe() func(*spans.Span) {
	if sm == nil {
		return nil
	}
	return sm.agg.Observe
}

// shutdown pushes what OTLP has not seen yet.
func (sm *spanMetrics) shutdown(ctx context.Context) {
	if sm == nil || sm.pusher == nil {
		return
	}
	if err := sm.pusher.Shutdown(ctx); err != nil {
		slog.Warn("metric exporter shutdown", "component", "export", "err", err)
	}
}
