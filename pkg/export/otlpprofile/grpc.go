package otlpprofile

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/metadata"
)

// grpcSender exports over gRPC; grpc.NewClient connects lazily.
type grpcSender struct {
	conn    *grpc.ClientConn
	client  pprofileotlp.GRPCClient
	headers metadata.MD
}

func newGRPCSender(cfg Config, compress bool) (*grpcSender, error) {
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
		return nil, fmt.Errorf("otlp profiles endpoint %q: no host", cfg.Endpoint)
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
	if compress {
		opts = append(opts, grpc.WithDefaultCallOptions(grpc.UseCompressor(gzip.Name)))
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp profiles client for %s: %w", cfg.Endpoint, err)
	}
	return &grpcSender{conn: conn, client: pprofileotlp.NewGRPCClient(conn), headers: metadata.New(cfg.Headers)}, nil
}

func (s *grpcSender) export(ctx context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	if len(s.headers) > 0 {
		ctx = metadata.NewOutgoingContext(ctx, s.headers.Copy())
	}
	return s.client.Export(ctx, req)
}

func (s *grpcSender) target() string { return s.conn.Target() }

func (s *grpcSender) close() error { return s.conn.Close() }
