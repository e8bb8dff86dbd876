package otlpprofile

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/stats"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/export/otlptls"
)

// encodings is a gRPC stats handler keeping each request's grpc-encoding.
type encodings struct {
	mu  sync.Mutex
	got []string
}

func (e *encodings) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context   { return ctx }
func (e *encodings) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (e *encodings) HandleConn(context.Context, stats.ConnStats)                       {}
func (e *encodings) HandleRPC(_ context.Context, s stats.RPCStats) {
	if h, ok := s.(*stats.InHeader); ok {
		e.mu.Lock()
		e.got = append(e.got, h.Compression)
		e.mu.Unlock()
	}
}

// The profile client takes the trace export's CA, client certificate and
// compression.
func TestExportOverMutualTLSWithGzip(t *testing.T) {
	ca := otlptest.NewCA(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen := &encodings{}
	srv := grpc.NewServer(grpc.StatsHandler(seen), grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, "server", "127.0.0.1").TLS},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool,
	})))
	rcv := &receiver{}
	pprofileotlp.RegisterGRPCServer(srv, rcv)
	go srv.Serve(ln)
	defer srv.Stop()

	client := ca.Issue(t, "client")
	export := func(files otlptls.Files) error {
		c, err := New(Config{Endpoint: "https://" + ln.Addr().String(), Compression: "gzip", TLS: files})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b := NewBuilder("v1")
		if err := b.Add(testProfile(t), resolver{}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.Export(ctx, b.Profiles())
	}

	if err := export(otlptls.Files{}); err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		t.Errorf("without the CA: error %v, want an unknown authority", err)
	}
	if err := export(otlptls.Files{Certificate: ca.CertFile, ClientCertificate: client.CertFile, ClientKey: client.KeyFile}); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(rcv.got) != 1 || len(seen.got) != 1 || seen.got[0] != "gzip" {
		t.Errorf("received %d requests, encodings %q: want one, gzip'd", len(rcv.got), seen.got)
	}
}

func TestNewRejectsBadTLSFilesAndCompression(t *testing.T) {
	for name, cfg := range map[string]Config{
		"CA file":     {Endpoint: "collector:4317", TLS: otlptls.Files{Certificate: "/nonexistent/ca.pem"}},
		"compression": {Endpoint: "collector:4317", Compression: "zstd"},
	} {
		if c, err := New(cfg); err == nil {
			c.Close()
			t.Errorf("%s: accepted", name)
		}
	}
}
