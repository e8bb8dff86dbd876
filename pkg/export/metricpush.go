package export

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
)

// MetricStats count the pushes of a MetricPusher.
type MetricStats struct {
	Exports  uint64 // resources whose metrics the backend accepted
	Failures uint64 // resources whose export failed (retries included)
	Points   uint64 // data points accepted
}

// MetricPusher sends metrics over OTLP every interval: the SDK's OTLP
// metric exporter, fed with data weft aggregates itself (one resource per
// traced service, which one SDK meter provider could not give).
type MetricPusher struct {
	exp      sdkmetric.Exporter
	collect  func() []metricdata.ResourceMetrics
	interval time.Duration
	timeout  time.Duration
	log      *slog.Logger

	exports, failures, points atomic.Uint64

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// NewMetricPusher starts pushing what collect returns to cfg's endpoint
// (for OTLP/HTTP the URL metrics are posted to). The connection is made
// lazily: an unreachable backend is no error here.
func NewMetricPusher(ctx context.Context, cfg OTLPConfig, interval time.Duration, collect func() []metricdata.ResourceMetrics) (*MetricPusher, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("create otlp metric exporter: no endpoint")
	}
	if interval <= 0 {
		return nil, fmt.Errorf("create otlp metric exporter: interval %v", interval)
	}
	cfg = cfg.withDefaults()
	exp, err := newMetricExporter(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create otlp metric exporter: %w", err)
	}
	p := &MetricPusher{
		exp: exp, collect: collect, interval: interval, timeout: cfg.Timeout,
		log:  slog.With("component", "export", "signal", "metrics"),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go p.run()
	return p, nil
}

func newMetricExporter(ctx context.Context, cfg OTLPConfig) (sdkmetric.Exporter, error) {
	tlsCfg, err := cfg.TLS.Config()
	if err != nil {
		return nil, err
	}
	switch cfg.Protocol {
	case "", ProtocolGRPC:
		opts, err := cfg.metricGRPCOptions(tlsCfg)
		if err != nil {
			return nil, err
		}
		return otlpmetricgrpc.New(ctx, opts...)
	case ProtocolHTTPProtobuf:
		opts, err := cfg.metricHTTPOptions(tlsCfg)
		if err != nil {
			return nil, err
		}
		return otlpmetrichttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("otlp protocol %q: want %s or %s", cfg.Protocol, ProtocolGRPC, ProtocolHTTPProtobuf)
}

func (c OTLPConfig) metricGRPCOptions(tlsCfg *tls.Config) ([]otlpmetricgrpc.Option, error) {
	target, plain, err := c.grpcTarget()
	if err != nil {
		return nil, err
	}
	creds := credentials.NewTLS(tlsCfg)
	if plain {
		creds = insecure.NewCredentials()
	}
	opts := []otlpmetricgrpc.Option{
		otlpmetricgrpc.WithEndpoint(target),
		otlpmetricgrpc.WithTLSCredentials(creds),
		otlpmetricgrpc.WithHeaders(c.Headers),
		otlpmetricgrpc.WithTimeout(c.Timeout),
		otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{
			Enabled:         c.RetryMaxElapsed > 0,
			InitialInterval: c.RetryInitialInterval,
			MaxInterval:     c.RetryMaxInterval,
			MaxElapsedTime:  c.RetryMaxElapsed,
		}),
	}
	var dial []grpc.DialOption
	switch c.Compression {
	case "gzip":
		opts = append(opts, otlpmetricgrpc.WithCompressor(gzip.Name))
	case "", "none":
		// As for spans: no "none" option, and gzip could come from the
		// environment.
		dial = append(dial, grpc.WithDefaultCallOptions(grpc.UseCompressor(encoding.Identity)))
	default:
		return nil, fmt.Errorf("otlp compression %q: want gzip or none", c.Compression)
	}
	return append(opts, otlpmetricgrpc.WithDialOption(dial...)), nil
}

func (c OTLPConfig) metricHTTPOptions(tlsCfg *tls.Config) ([]otlpmetrichttp.Option, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("otlp endpoint %q: %w", c.Endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otlp endpoint %q: OTLP/HTTP wants an http:// or https:// URL", c.Endpoint)
	}
	compression := otlpmetrichttp.NoCompression
	switch c.Compression {
	case "gzip":
		compression = otlpmetrichttp.GzipCompression
	case "", "none":
	default:
		return nil, fmt.Errorf("otlp compression %q: want gzip or none", c.Compression)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme == "https" {
		transport.TLSClientConfig = tlsCfg
	} else {
		tlsCfg = nil // see httpOptions
	}
	return []otlpmetrichttp.Option{
		otlpmetrichttp.WithEndpointURL(c.Endpoint),
		otlpmetrichttp.WithTLSClientConfig(tlsCfg),
		otlpmetrichttp.WithHTTPClient(&http.Client{Transport: transport}),
		otlpmetrichttp.WithCompression(compression),
		otlpmetrichttp.WithHeaders(c.Headers),
		otlpmetrichttp.WithTimeout(c.Timeout),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{
			Enabled:         c.RetryMaxElapsed > 0,
			InitialInterval: c.RetryInitialInterval,
			MaxInterval:     c.RetryMaxInterval,
			MaxElapsedTime:  c.RetryMaxElapsed,
		}),
	}, nil
}

func (p *MetricPusher) run() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.push()
		case <-p.stop:
			return
		}
	}
}

// push exports one collection, a request per resource (the SDK exporter
// takes one at a time). A failed resource is logged and counted; the
// others still go.
func (p *MetricPusher) push() {
	for _, rm := range p.collect() {
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		err := p.exp.Export(ctx, &rm)
		cancel()
		if err != nil {
			if p.failures.Add(1) == 1 || p.failures.Load()%100 == 0 {
				p.log.Warn("metric export failed", "err", err, "failures", p.failures.Load())
			}
			continue
		}
		p.exports.Add(1)
		p.points.Add(uint64(points(&rm)))
	}
}

func points(rm *metricdata.ResourceMetrics) int {
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				n += len(d.DataPoints)
			case metricdata.Sum[int64]:
				n += len(d.DataPoints)
			}
		}
	}
	return n
}

// Stats returns the counters.
func (p *MetricPusher) Stats() MetricStats {
	return MetricStats{Exports: p.exports.Load(), Failures: p.failures.Load(), Points: p.points.Load()}
}

// Shutdown stops the timer, pushes a last time (what happened since the
// last push is not lost) and closes the exporter.
func (p *MetricPusher) Shutdown(ctx context.Context) error {
	var err error
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		p.push()
		err = p.exp.Shutdown(ctx)
	})
	return err
}
