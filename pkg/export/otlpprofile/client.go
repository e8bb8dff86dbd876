package otlpprofile

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"

	"github.com/weftdev/weft/pkg/export/otlptls"
)

// Config is where profiles go.
type Config struct {
	// Endpoint is host:port, or a URL whose scheme selects TLS (https) or
	// plaintext (http).
	Endpoint string
	// Insecure forces a plaintext connection.
	Insecure bool
	// Headers are sent with every request.
	Headers map[string]string
	// Compression is "gzip", or "none" (also when empty).
	Compression string
	// TLS names the CA and client certificate files.
	TLS otlptls.Files
}

// Client sends OTLP profiles over gRPC. The connection is made lazily: an
// unreachable endpoint fails exports, not New.
type Client struct {
	conn    *grpc.ClientConn
	client  pprofileotlp.GRPCClient
	headers metadata.MD
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	target, plain := cfg.Endpoint, cfg.Insecure
	if scheme, rest, ok := strings.Cut(target, "://"); ok {
		switch scheme {
		case "http":
			plain = true
		case "https":
		default:
			return nil, fmt.Errorf("otlp profiles endpoint %q: want host:port, http:// or https://", cfg.Endpoint)
		}
		target = strings.TrimSuffix(rest, "/")
	}
	if target == "" {
		return nil, errors.New("otlp profiles endpoint is empty")
	}
	creds := insecure.NewCredentials()
	if !plain {
		tlsCfg, err := cfg.TLS.Config()
		if err != nil {
			return nil, err
		}
		creds = credentials.NewTLS(tlsCfg)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds)}
	switch cfg.Compression {
	case "gzip":
		opts = append(opts, grpc.WithDefaultCallOptions(grpc.UseCompressor(gzip.Name)))
	case "", "none":
	default:
		return nil, fmt.Errorf("otlp profiles compression %q: want gzip or none", cfg.Compression)
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp profiles client for %s: %w", cfg.Endpoint, err)
	}
	return &Client{conn: conn, client: pprofileotlp.NewGRPCClient(conn), headers: metadata.New(cfg.Headers)}, nil
}

// Export sends one request and reports a rejection, whole or partial.
func (c *Client) Export(ctx context.Context, p pprofile.Profiles) error {
	if len(c.headers) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, c.headers.Copy())
	}
	resp, err := c.client.Export(ctx, pprofileotlp.NewExportRequestFromProfiles(p))
	if err != nil {
		return fmt.Errorf("export profiles: %w", err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedProfiles() > 0 {
		return fmt.Errorf("export profiles: %d rejected: %s", ps.RejectedProfiles(), ps.ErrorMessage())
	}
	return nil
}

// Close closes the connection.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("close otlp profiles client: %w", err)
	}
	return nil
}
