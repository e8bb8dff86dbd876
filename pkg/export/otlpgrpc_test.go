package export

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/export/otlptls"
)

// startGRPC serves rcv over gRPC (TLS when creds is set) and returns its
// address and what it sees of the requests' compression.
func startGRPC(t *testing.T, rcv *otlptest.Receiver, creds credentials.TransportCredentials) (string, *otlptest.Encodings) {
	t.Helper()
	seen := &otlptest.Encodings{}
	opts := []grpc.ServerOption{grpc.StatsHandler(seen)}
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	collectortrace.RegisterTraceServiceServer(srv, rcv)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)
	return l.Addr().String(), seen
}

// "none" must hold against the environment too, which otlptracegrpc
// would otherwise follow.
func TestOTLPGRPCCompression(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")
	for compression, want := range map[string]string{"gzip": "gzip", "none": "identity"} {
		t.Run(compression, func(t *testing.T) {
			rcv := otlptest.New(t)
			addr, seen := startGRPC(t, rcv, nil)
			cfg := testOTLPConfig(addr)
			cfg.Compression = compression
			exp := newTestOTLP(t, cfg)
			exp.Export(serverSpan())
			waitRecords(t, rcv, 1)
			if got := seen.Seen(); len(got) != 1 || got[0] != want {
				t.Errorf("grpc-encoding %q, want %q", got, want)
			}
		})
	}
}

func TestOTLPGRPCWithCustomCAAndClientCertificate(t *testing.T) {
	ca := otlptest.NewCA(t)
	rcv := otlptest.New(t)
	addr, _ := startGRPC(t, rcv, credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, "server", "127.0.0.1").TLS},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool,
	}))
	client := ca.Issue(t, "client")
	cfg := testOTLPConfig("https://" + addr)
	cfg.Insecure = false
	cfg.TLS = otlptls.Files{Certificate: ca.CertFile, ClientCertificate: client.CertFile, ClientKey: client.KeyFile}
	exp := newTestOTLP(t, cfg)

	exp.Export(serverSpan())
	waitRecords(t, rcv, 1)
	if s := settled(t, exp); s.Exported != 1 || s.Failed != 0 {
		t.Errorf("stats %+v, want 1 exported", s)
	}
}

// Without the CA the handshake fails; gRPC retries it as Unavailable
// within the retry window, then the spans count as failed.
func TestOTLPGRPCUnknownCAFails(t *testing.T) {
	logs := captureLog(t)
	ca := otlptest.NewCA(t)
	rcv := otlptest.New(t)
	addr, _ := startGRPC(t, rcv, credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, "server", "127.0.0.1").TLS},
	}))
	cfg := testOTLPConfig(addr)
	cfg.Insecure = false
	exp := newTestOTLP(t, cfg)

	exp.Export(serverSpan())
	if s := settled(t, exp); s.Exported != 0 || s.Failed != 1 {
		t.Errorf("stats %+v, want 1 failed", s)
	}
	if out := logs.String(); !strings.Contains(out, "x509: certificate signed by unknown authority") {
		t.Errorf("log lacks the x509 error:\n%s", out)
	}
}
