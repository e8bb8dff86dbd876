package export

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/weftdev/weft/pkg/export/otlptls"
)

// The protocols of OTLPConfig.Protocol.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// OTLPConfig configures the OTLP exporter. Every setting is passed to the
// SDK explicitly, which would otherwise fill gaps from the
// OTEL_EXPORTER_OTLP_* variables itself: weft's configuration, which reads
// them in its own precedence, is the one source.
type OTLPConfig struct {
	// Protocol is ProtocolGRPC (the default) or ProtocolHTTPProtobuf.
	Protocol string
	// Endpoint is, for gRPC, host:port or a URL whose scheme selects TLS
	// (https) or plaintext (http); for OTLP/HTTP the URL spans are posted
	// to, used as it is.
	Endpoint string
	// Insecure forces a plaintext gRPC connection; an HTTP endpoint's
	// scheme decides alone.
	Insecure bool
	// Headers are sent with every request.
	Headers map[string]string
	// Timeout bounds one batch export, retries included; default 30s.
	Timeout time.Duration
	// Compression is "gzip", or "none" (also when empty).
	Compression string
	// TLS names the CA and client certificate files.
	TLS otlptls.Files

	// Retry policy for retryable errors. RetryMaxElapsed bounds how
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
	// The SDK's 10s default would cut the retry window short.
	setDur(&c.Timeout, defaultTimeout)
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

// grpcTarget splits a gRPC endpoint into the dial target and whether it
// is plaintext: an http URL or Insecure is, anything else is TLS.
func (c OTLPConfig) grpcTarget() (target string, plain bool, err error) {
	if !strings.Contains(c.Endpoint, "://") {
		return c.Endpoint, c.Insecure, nil
	}
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return "", false, fmt.Errorf("otlp endpoint %q: %w", c.Endpoint, err)
	}
	switch u.Scheme {
	case "http":
		return u.Host, true, nil
	case "https":
		return u.Host, c.Insecure, nil
	}
	return "", false, fmt.Errorf("otlp endpoint %q: want host:port, http:// or https://", c.Endpoint)
}

// grpcOptions translates the config for otlptracegrpc; tlsCfg is used
// unless the connection is plaintext.
func (c OTLPConfig) grpcOptions(tlsCfg *tls.Config, outcome *rpcOutcome) ([]otlptracegrpc.Option, error) {
	target, plain, err := c.grpcTarget()
	if err != nil {
		return nil, err
	}
	creds := credentials.NewTLS(tlsCfg)
	if plain {
		creds = insecure.NewCredentials()
	}
	opts := []otlptracegrpc.Option{
		otlptracegrpc.WithEndpoint(target),
		// Credentials win over the SDK's own Insecure, which the
		// environment may have set.
		otlptracegrpc.WithTLSCredentials(creds),
		otlptracegrpc.WithHeaders(c.Headers),
		otlptracegrpc.WithTimeout(c.Timeout),
		otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{
			Enabled:         c.RetryMaxElapsed > 0,
			InitialInterval: c.RetryInitialInterval,
			MaxInterval:     c.RetryMaxInterval,
			MaxElapsedTime:  c.RetryMaxElapsed,
		}),
	}
	dial := []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(outcome.intercept),
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(exportCodec{})),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  min(time.Second, c.ReconnectMaxDelay),
				Multiplier: backoff.DefaultConfig.Multiplier,
				Jitter:     backoff.DefaultConfig.Jitter,
				MaxDelay:   c.ReconnectMaxDelay,
			},
			MinConnectTimeout: minConnectTimeout,
		}),
	}
	switch c.Compression {
	case "gzip":
		opts = append(opts, otlptracegrpc.WithCompressor(gzip.Name))
	case "", "none":
		// otlptracegrpc has no option for "none" (WithCompressor reports
		// it as an error) and would take gzip from the environment; a
		// later default call option replaces its compressor.
		dial = append(dial, grpc.WithDefaultCallOptions(grpc.UseCompressor(encoding.Identity)))
	default:
		return nil, fmt.Errorf("otlp compression %q: want gzip or none", c.Compression)
	}
	// A single WithDialOption: each call replaces the previous options.
	return append(opts, otlptracegrpc.WithDialOption(dial...)), nil
}
