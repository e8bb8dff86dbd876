package export

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

func testHTTPConfig(url string) OTLPConfig {
	cfg := testOTLPConfig(url)
	cfg.Protocol = ProtocolHTTPProtobuf
	return cfg
}

// logBuffer collects what the exporters log from their goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// captureLog sends the default logger, which exporters take when they are
// made, to a buffer for the rest of the test.
func captureLog(t *testing.T) *logBuffer {
	t.Helper()
	buf := &logBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return buf
}

func TestOTLPHTTPExports(t *testing.T) {
	for _, compression := range []string{"gzip", "none"} {
		t.Run(compression, func(t *testing.T) {
			rcv := otlptest.New(t)
			srv := httptest.NewServer(rcv)
			t.Cleanup(srv.Close)
			cfg := testHTTPConfig(srv.URL + "/v1/traces")
			cfg.Compression = compression
			cfg.Headers = map[string]string{"api-key": "secret"}
			exp := newTestOTLP(t, cfg)

			server, client := serverSpan(), clientSpan()
			exp.Export(server)
			exp.Export(client)
			recs := waitRecords(t, rcv, 2)
			byName := map[string]otlptest.Record{}
			for _, r := range recs {
				byName[r.Span.GetName()] = r
			}
			if s := byName[server.Name].Span; !bytes.Equal(s.GetTraceId(), server.TraceID[:]) || !bytes.Equal(s.GetSpanId(), server.SpanID[:]) {
				t.Errorf("server span ids %x/%x, want %x/%x", s.GetTraceId(), s.GetSpanId(), server.TraceID, server.SpanID)
			}
			if s := byName[client.Name].Span; !bytes.Equal(s.GetSpanId(), client.SpanID[:]) {
				t.Errorf("client span id %x, want %x", s.GetSpanId(), client.SpanID)
			}
			wantEncoding := map[string]string{"gzip": "gzip", "none": ""}[compression]
			for _, md := range rcv.Metadata() {
				if got := md.Get(":path"); len(got) != 1 || got[0] != "/v1/traces" {
					t.Errorf("path %q, want /v1/traces", got)
				}
				if got := strings.Join(md.Get("content-encoding"), ","); got != wantEncoding {
					t.Errorf("Content-Encoding %q, want %q", got, wantEncoding)
				}
				if got := md.Get("api-key"); len(got) != 1 || got[0] != "secret" {
					t.Errorf("api-key header %q, want secret", got)
				}
			}
			if s := settled(t, exp); s.Exported != 2 || s.Failed != 0 {
				t.Errorf("stats %+v, want 2 exported", s)
			}
		})
	}
}

func TestOTLPHTTPSWithCustomCA(t *testing.T) {
	rcv := otlptest.New(t)
	srv := httptest.NewTLSServer(rcv)
	t.Cleanup(srv.Close)
	cfg := testHTTPConfig(srv.URL + "/v1/traces")
	cfg.TLS.Certificate = otlptest.WriteCertPEM(t, srv.Certificate())
	exp := newTestOTLP(t, cfg)

	exp.Export(serverSpan())
	waitRecords(t, rcv, 1)
	if s := settled(t, exp); s.Exported != 1 || s.Failed != 0 {
		t.Errorf("stats %+v, want 1 exported", s)
	}
}

// A server whose CA is not trusted fails the export at once: otlptracehttp
// does not retry a failed TLS handshake, so the retry window (30s by
// default, kept here) does not delay the failure.
func TestOTLPHTTPSUnknownCAFails(t *testing.T) {
	logs := captureLog(t)
	rcv := otlptest.New(t)
	srv := httptest.NewTLSServer(rcv)
	t.Cleanup(srv.Close)
	cfg := testHTTPConfig(srv.URL + "/v1/traces")
	cfg.RetryMaxElapsed = 0
	exp := newTestOTLP(t, cfg)

	exp.Export(serverSpan())
	exp.Export(clientSpan())
	if s := settled(t, exp); s.Exported != 0 || s.Failed != 2 {
		t.Errorf("stats %+v, want 2 failed", s)
	}
	if n := len(rcv.Spans()); n != 0 {
		t.Errorf("receiver got %d spans", n)
	}
	out := logs.String()
	if !strings.Contains(out, `msg="span export failed"`) || !strings.Contains(out, "x509: certificate signed by unknown authority") {
		t.Errorf("log lacks the failed export and its x509 error:\n%s", out)
	}
}

func TestOTLPHTTPSMutualTLS(t *testing.T) {
	ca := otlptest.NewCA(t)
	rcv := otlptest.New(t)
	srv := httptest.NewUnstartedServer(rcv)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{ca.Issue(t, "server", "127.0.0.1").TLS},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    ca.Pool,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	client := ca.Issue(t, "client")

	cfg := testHTTPConfig(srv.URL + "/v1/traces")
	cfg.TLS.Certificate = ca.CertFile
	without := newTestOTLP(t, cfg)
	without.Export(serverSpan())
	if s := settled(t, without); s.Exported != 0 || s.Failed != 1 {
		t.Errorf("without a client certificate: stats %+v, want 1 failed", s)
	}

	cfg.TLS.ClientCertificate, cfg.TLS.ClientKey = client.CertFile, client.KeyFile
	with := newTestOTLP(t, cfg)
	with.Export(serverSpan())
	waitRecords(t, rcv, 1)
	if s := settled(t, with); s.Exported != 1 || s.Failed != 0 {
		t.Errorf("with a client certificate: stats %+v, want 1 exported", s)
	}
}

func TestOTLPHTTPPartialSuccess(t *testing.T) {
	logs := captureLog(t)
	rcv := otlptest.New(t)
	rcv.SetPartialSuccess(1)
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	cfg := testHTTPConfig(srv.URL + "/v1/traces")
	cfg.MaxBatchSize, cfg.BatchTimeout = 3, time.Hour // one batch of three
	exp := newTestOTLP(t, cfg)

	for range 3 {
		exp.Export(serverSpan())
	}
	waitRecords(t, rcv, 3)
	if s := settled(t, exp); s.Exported != 2 || s.Failed != 1 {
		t.Errorf("stats %+v, want 2 exported and 1 failed", s)
	}
	if out := logs.String(); !strings.Contains(out, "OTLP partial success: rejected by otlptest (1 spans rejected)") {
		t.Errorf("log lacks the partial success:\n%s", out)
	}
}

func TestOTLPHTTPRejectedRequestFailsOnce(t *testing.T) {
	rcv := otlptest.New(t)
	rcv.SetError(errors.New("bad request"))
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	cfg := testHTTPConfig(srv.URL + "/v1/traces")
	cfg.MaxBatchSize, cfg.BatchTimeout, cfg.RetryMaxElapsed = 2, time.Hour, 0 // one batch; default retries
	exp := newTestOTLP(t, cfg)

	exp.Export(serverSpan())
	exp.Export(clientSpan())
	if s := settled(t, exp); s.Exported != 0 || s.Failed != 2 {
		t.Errorf("stats %+v, want 2 failed", s)
	}
	if n := len(rcv.Metadata()); n != 1 {
		t.Errorf("%d requests, want 1: a 400 is not retried", n)
	}
}

func TestOTLPHTTPBadSettingsFailAtStart(t *testing.T) {
	for name, mut := range map[string]func(*OTLPConfig){
		"no scheme":   func(c *OTLPConfig) { c.Endpoint = "127.0.0.1:4318" },
		"compression": func(c *OTLPConfig) { c.Compression = "zstd" },
		"CA file":     func(c *OTLPConfig) { c.TLS.Certificate = "/nonexistent/ca.pem" },
		"protocol":    func(c *OTLPConfig) { c.Protocol = "http/json" },
	} {
		cfg := testHTTPConfig("https://127.0.0.1:4318/v1/traces")
		mut(&cfg)
		if exp, err := NewOTLP(context.Background(), cfg, fakeResolver{}); err == nil {
			_ = exp.Shutdown(context.Background())
			t.Errorf("%s: accepted", name)
		}
	}
}
