package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/test/jaeger"
)

// otlpJaeger is a running Jaeger with plain and TLS OTLP receivers.
type otlpJaeger struct {
	grpc, http       string // host:port, plaintext
	grpcTLS, httpTLS string // host:port, TLS with a test CA's certificate
	query            string // http://host:port of the query API
}

// startOTLPJaeger runs the project's pinned Jaeger with every OTLP
// receiver in the traces pipeline, spans kept in memory.
func startOTLPJaeger(t *testing.T, bin string, cert otlptest.Pair) otlpJaeger {
	t.Helper()
	addr := func() string { return "127.0.0.1:" + strconv.Itoa(freePort(t)) }
	j := otlpJaeger{grpc: addr(), http: addr(), grpcTLS: addr(), httpTLS: addr()}
	queryAddr, queryGRPC := addr(), addr()
	j.query = "http://" + queryAddr
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp, otlp/tls]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      e2e_store:
        memory:
          max_traces: 10000
  jaeger_query:
    enable_tracing: false
    storage:
      traces: e2e_store
    http:
      endpoint: %[1]s
    grpc:
      endpoint: %[2]s
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[3]s
      http:
        endpoint: %[4]s
  otlp/tls:
    protocols:
      grpc:
        endpoint: %[5]s
        tls:
          cert_file: %[7]s
          key_file: %[8]s
      http:
        endpoint: %[6]s
        tls:
          cert_file: %[7]s
          key_file: %[8]s
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: e2e_store
`, queryAddr, queryGRPC, j.grpc, j.http, j.grpcTLS, j.httpTLS, cert.CertFile, cert.KeyFile)
	path := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "--config", "file:"+path)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := j.spans("jaeger-readiness")
		for _, a := range []string{j.grpc, j.http, j.grpcTLS, j.httpTLS} {
			if err == nil {
				var c net.Conn
				if c, err = net.DialTimeout("tcp", a, time.Second); err == nil {
					c.Close()
				}
			}
		}
		if err == nil {
			return j
		}
		if !p.Alive() || time.Now().After(deadline) {
			t.Fatalf("Jaeger not ready: %v\n%s", err, p.Output())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// jaegerSpan is a span as Jaeger's query API returns it, its tags as
// strings.
type jaegerSpan struct {
	name, service string
	tags          map[string]string
}

// spans returns the spans of service that Jaeger holds.
func (j otlpJaeger) spans(service string) ([]jaegerSpan, error) {
	u := j.query + "/api/traces?" + url.Values{"service": {service}, "limit": {"1000"}}.Encode()
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r struct {
		Data []struct {
			Spans []struct {
				OperationName string `json:"operationName"`
				ProcessID     string `json:"processID"`
				Tags          []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"tags"`
			} `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	// An unknown service is a 404 with an error, not an empty answer.
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	var out []jaegerSpan
	for _, tr := range r.Data {
		for _, s := range tr.Spans {
			js := jaegerSpan{name: s.OperationName, service: tr.Processes[s.ProcessID].ServiceName, tags: map[string]string{}}
			for _, tag := range s.Tags {
				js.tags[tag.Key] = fmt.Sprint(tag.Value)
			}
			out = append(out, js)
		}
	}
	return out, nil
}

// TestOTLPProtocolsJaeger sends one traced server's spans to a real Jaeger
// over every protocol, compression and TLS setting weft has, and checks
// that the same spans arrive each time; then that an untrusted server
// certificate fails every span, loudly.
func TestOTLPProtocolsJaeger(t *testing.T) {
	setup(t)
	began := time.Now()
	bin, err := jaeger.Build(context.Background(), repoRoot())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Jaeger %s ready in %s (built once, then reused from .cache/bin)", jaeger.Version, time.Since(began).Round(time.Second))
	ca := otlptest.NewCA(t)
	j := startOTLPJaeger(t, bin, ca.Issue(t, "jaeger", "127.0.0.1"))

	const n = 20
	var wantKeys []string // the tag keys of the first run's spans
	for _, run := range []struct {
		name     string
		protocol string
		args     []string
		env      map[string]string
	}{
		{name: "grpc", protocol: "grpc", args: []string{"--otlp-endpoint=" + j.grpc}},
		{name: "grpc-gzip", protocol: "grpc", args: []string{"--otlp-endpoint=" + j.grpc, "--otlp-compression=gzip"}},
		{name: "http", protocol: "http/protobuf", args: []string{"--otlp-endpoint=http://" + j.http, "--otlp-protocol=http/protobuf"}},
		{name: "http-gzip", protocol: "http/protobuf", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://" + j.http, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip",
		}},
		{name: "https", protocol: "http/protobuf", env: map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://" + j.httpTLS + "/v1/traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
			"OTEL_EXPORTER_OTLP_CERTIFICATE": ca.CertFile,
		}},
		// startWeft passes --otlp-insecure, which would make gRPC plaintext.
		{name: "grpcs", protocol: "grpc", args: []string{"--otlp-endpoint=https://" + j.grpcTLS, "--otlp-insecure=false", "--otlp-certificate=" + ca.CertFile}},
	} {
		t.Run(run.name, func(t *testing.T) {
			for k, v := range run.env {
				t.Setenv(k, v)
			}
			service := "otlp-" + run.name
			w, addr := traceOneServer(t, service, run.args)
			if !strings.Contains(w.Output(), `msg="exporting spans over OTLP" component=export protocol=`+run.protocol+" ") {
				t.Errorf("weft did not say it exports over %s:\n%s", run.protocol, w.Output())
			}
			for i := range n {
				get(t, fmt.Sprintf("http://%s/%s/%d", addr, run.name, i))
			}
			m := waitMetrics(t, w, func(m map[string]uint64) bool { return m["spans_exported"]+m["spans_failed"]+m["spans_dropped"] >= n })
			if m["spans_received"] != n || m["spans_exported"] != n || m["spans_failed"] != 0 || m["spans_dropped"] != 0 {
				t.Fatalf("metrics received %d exported %d failed %d dropped %d, want %d exported\n%s",
					m["spans_received"], m["spans_exported"], m["spans_failed"], m["spans_dropped"], n, w.Output())
			}

			var got []jaegerSpan
			deadline := time.Now().Add(30 * time.Second)
			for len(got) < n && time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				if got, err = j.spans(service); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != n {
				t.Fatalf("Jaeger has %d spans of %s, want %d", len(got), service, n)
			}
			paths := map[string]bool{}
			wantName := "GET /" + run.name + "/{id}" // the route weft infers from the numbered paths
			for _, s := range got {
				if s.name != wantName || s.service != service || s.tags["span.kind"] != "server" ||
					s.tags["http.request.method"] != "GET" || s.tags["http.response.status_code"] != "200" {
					t.Errorf("span %q of %q, tags %v: want a server span %q of %s with status 200", s.name, s.service, s.tags, wantName, service)
				}
				paths[s.tags["url.path"]] = true
				keys := slices.Sorted(func(yield func(string) bool) {
					for k := range s.tags {
						if !yield(k) {
							return
						}
					}
				})
				if wantKeys == nil {
					wantKeys = keys
				} else if !slices.Equal(keys, wantKeys) {
					t.Errorf("span of %s has tags %q, want the first run's %q", service, keys, wantKeys)
				}
			}
			for i := range n {
				if p := fmt.Sprintf("/%s/%d", run.name, i); !paths[p] {
					t.Errorf("no span of %s with url.path %s", service, p)
				}
			}
		})
	}

	t.Run("https-unknown-ca", func(t *testing.T) {
		service := "otlp-https-unknown-ca"
		w, addr := traceOneServer(t, service, []string{"--otlp-endpoint=https://" + j.httpTLS, "--otlp-protocol=http/protobuf"})
		for i := range n {
			get(t, fmt.Sprintf("http://%s/https-unknown-ca/%d", addr, i))
		}
		// otlptracehttp does not retry a failed handshake: the spans fail
		// with their batch, without waiting out the retry window.
		m := waitMetrics(t, w, func(m map[string]uint64) bool { return m["spans_exported"]+m["spans_failed"]+m["spans_dropped"] >= n })
		if m["spans_received"] != n || m["spans_failed"] != n || m["spans_exported"] != 0 || m["spans_dropped"] != 0 {
			t.Fatalf("metrics received %d exported %d failed %d dropped %d, want %d failed\n%s",
				m["spans_received"], m["spans_exported"], m["spans_failed"], m["spans_dropped"], n, w.Output())
		}
		failed := ""
		for _, line := range strings.Split(w.Output(), "\n") {
			if strings.Contains(line, `msg="span export failed"`) && strings.Contains(line, "x509: certificate signed by unknown authority") {
				failed = line
				break
			}
		}
		if failed == "" {
			t.Fatalf("no span export failed line naming the unknown authority:\n%s", w.Output())
		}
		t.Logf("weft: %s", failed)
		time.Sleep(time.Second) // longer than Jaeger's batch timeout
		if got, err := j.spans(service); err != nil || len(got) != 0 {
			t.Fatalf("Jaeger has %d spans of %s (%v), want none", len(got), service, err)
		}
	})
}

// traceOneServer starts a thread-mode websrv as service and a weft
// tracing it alone, exporting with args; it returns weft and the
// server's address.
func traceOneServer(t *testing.T, service string, args []string) (*weft, string) {
	t.Helper()
	cmd := exec.Command(bins.websr, "-mode=thread")
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME="+service)
	srv, addr := startListener(t, cmd)
	return startWeft(t, nil, append([]string{"--pid=" + strconv.Itoa(srv.Pid())}, args...)...), addr
}

// waitMetrics polls weft's self-metrics until done holds (30s at most).
func waitMetrics(t *testing.T, w *weft, done func(map[string]uint64) bool) map[string]uint64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := w.Metrics()
		if err == nil && done(m) {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics %v (%v) not there after 30s:\n%s", m, err, w.Output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
