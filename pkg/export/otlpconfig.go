package export

import (
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// OTLPConfig configures the OTLP/gRPC exporter. Zero values mean "use the
// standard OTEL_EXPORTER_OTLP_* environment variables, else the default";
// set fields override the environment.
type OTLPConfig struct {
	// Endpoint is host:port, or a URL whose scheme selects TLS (https) or
	// plaintext (http).
	Endpoint string
	// Insecure forces a plaintext connection.
	Insecure bool
	// Headers are sent with every request, replacing OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string
	// Timeout bounds one batch export, retries included; default 30s.
	Timeout time.Duration

	// Retry policy for retryable gRPC errors. RetryMaxElapsed bounds how
	// long a batch is retried before it is counted as failed (default
	// 30s; negative disables retries). Intervals default to 1s and 5s.
	RetryInitialInterval time.Duration
	RetryMaxInterval     time.Duration
	RetryMaxElapsed      time.Duration
	// ReconnectMaxDelay caps gRPC's reconnection backoff (gRPC's own cap is
	// two minutes) so exporting resumes soon after the backend returns;
	// default 5s.
	ReconnectMaxDelay time.Duration

	// QueueSize bounds the spans waiting for export; default 8192.
	QueueSize int
	// MaxBatchSize and BatchTimeout trigger a batch export, whichever comes
	// first; defaults 512 and 1s.
	MaxBatchSize int
	BatchTimeout time.Duration

	// Version is the instrumentation scope version.
	Version string
}

const (
	defaultTimeout           = 30 * time.Second
	defaultRetryInitial      = time.Second
	defaultRetryMaxInterval  = 5 * time.Second
	defaultRetryMaxElapsed   = 30 * time.Second
	defaultReconnectMaxDelay = 5 * time.Second
	defaultQueueSize         = 8192
	defaultMaxBatchSize      = 512
	defaultBatchTimeout      = time.Second
	minConnectTimeout        = 20 * time.Second
)

func (c OTLPConfig) withDefaults() OTLPConfig {
	setDur := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	setDur(&c.RetryInitialInterval, defaultRetryInitial)
	setDur(&c.RetryMaxInterval, defaultRetryMaxInterval)
	setDur(&c.RetryMaxElapsed, defaultRetryMaxElapsed)
	setDur(&c.ReconnectMaxDelay, defaultReconnectMaxDelay)
	setDur(&c.BatchTimeout, defaultBatchTimeout)
	if c.QueueSize <= 0 {
		c.QueueSize = defaultQueueSize
	}
	if c.MaxBatchSize <= 0 {
		c.MaxBatchSize = defaultMaxBatchSize
	}
	return c
}

// clientOptions translates the config for otlptracegrpc, which itself reads
// the environment for everything not given here.
func (c OTLPConfig) clientOptions(outcome *rpcOutcome) []otlptracegrpc.Option {
	var opts []otlptracegrpc.Option
	switch {
	case strings.Contains(c.Endpoint, "://"):
		opts = append(opts, otlptracegrpc.WithEndpointURL(c.Endpoint))
	case c.Endpoint != "":
		opts = append(opts, otlptracegrpc.WithEndpoint(c.Endpoint))
	}
	if c.Insecure {
		opts = append(opts, otlptracegrpc.WithInsecure())
	}
	if len(c.Headers) > 0 {
		opts = append(opts, otlptracegrpc.WithHeaders(c.Headers))
	}
	switch {
	case c.Timeout > 0:
		opts = append(opts, otlptracegrpc.WithTimeout(c.Timeout))
	case os.Getenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TIMEOUT") == "":
		// The SDK's 10s default would cut the retry window short.
		opts = append(opts, otlptracegrpc.WithTimeout(defaultTimeout))
	}
	opts = append(opts, otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
		Enabled:         c.RetryMaxElapsed > 0,
		InitialInterval: c.RetryInitialInterval,
		MaxInterval:     c.RetryMaxInterval,
		MaxElapsedTime:  c.RetryMaxElapsed,
	}))
	// A single WithDialOption: each call replaces the previous options.
	opts = append(opts, otlptracegrpc.WithDialOption(
		grpc.WithChainUnaryInterceptor(outcome.intercept),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  min(time.Second, c.ReconnectMaxDelay),
				Multiplier: backoff.DefaultConfig.Multiplier,
				Jitter:     backoff.DefaultConfig.Jitter,
				MaxDelay:   c.ReconnectMaxDelay,
			},
			MinConnectTimeout: minConnectTimeout,
		}),
	))
	return opts
}
