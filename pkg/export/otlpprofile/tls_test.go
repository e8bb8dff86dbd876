package otlpprofile

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/export/otlptls"
)

// The profile client takes the trace export's CA, client certificate and
// compression.
func TestExportOverMutualTLSWithGzip(t *testing.T) {
	ca := otlptest.NewCA(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	seen := &otlptest.Encodings{}
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
	if enc := seen.Seen(); len(rcv.got) != 1 || len(enc) != 1 || enc[0] != "gzip" {
		t.Errorf("received %d requests, encodings %q: want one, gzip'd", len(rcv.got), enc)
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
