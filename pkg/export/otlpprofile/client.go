package otlpprofile

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"

	"github.com/weftdev/weft/pkg/export/otlptls"
)

// The protocols of Config.Protocol.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
)

// Config is where profiles go.
type Config struct {
	// Protocol is ProtocolGRPC (also when empty) or ProtocolHTTPProtobuf.
	Protocol string
	// Endpoint is host:port, or a URL whose scheme selects TLS (https) or
	// plaintext (http). For OTLP/HTTP it is the URL profiles are posted
	// to, a URL without a path getting /v1development/profiles.
	Endpoint string
	// Insecure forces a plaintext gRPC connection; for OTLP/HTTP it makes
	// an endpoint without a scheme http rather than https.
	Insecure bool
	// Headers are sent with every request.
	Headers map[string]string
	// Compression is "gzip", or "none" (also when empty).
	Compression string
	// TLS names the CA and client certificate files.
	TLS otlptls.Files
}

// sender is one protocol's way of making an export request.
type sender interface {
	export(context.Context, pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error)
	// target is where requests go, for the log.
	target() string
	close() error
}

// Client sends OTLP profiles over the configured protocol. Nothing is
// connected in New: an unreachable endpoint fails exports, not New.
type Client struct {
	s sender
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("otlp profiles endpoint is empty")
	}
	var gzip bool
	switch cfg.Compression {
	case "gzip":
		gzip = true
	case "", "none":
	default:
		return nil, fmt.Errorf("otlp profiles compression %q: want gzip or none", cfg.Compression)
	}
	var (
		s   sender
		err error
	)
	switch cfg.Protocol {
	case "", ProtocolGRPC:
		s, err = newGRPCSender(cfg, gzip)
	case ProtocolHTTPProtobuf:
		s, err = newHTTPSender(cfg, gzip)
	default:
		return nil, fmt.Errorf("otlp profiles protocol %q: want grpc or http/protobuf", cfg.Protocol)
	}
	if err != nil {
		return nil, err
	}
	return &Client{s: s}, nil
}

// Target is where profiles go: the gRPC target, or the URL they are
// posted to.
func (c *Client) Target() string { return c.s.target() }

// Export sends one request and reports a rejection, whole or partial.
func (c *Client) Export(ctx context.Context, p pprofile.Profiles) error {
	resp, err := c.s.export(ctx, pprofileotlp.NewExportRequestFromProfiles(p))
	if err != nil {
		return fmt.Errorf("export profiles: %w", err)
	}
	if ps := resp.PartialSuccess(); ps.RejectedProfiles() > 0 {
		return fmt.Errorf("export profiles: %d rejected: %s", ps.RejectedProfiles(), ps.ErrorMessage())
	}
	return nil
}

// Close releases the connection.
func (c *Client) Close() error {
	if err := c.s.close(); err != nil {
		return fmt.Errorf("close otlp profiles client: %w", err)
	}
	return nil
}
