package otlpprofile

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/export/otlptls"
)

// httpRequest is what an httpReceiver got in one request.
type httpRequest struct {
	method, path string
	header       http.Header
	profiles     pprofile.Profiles
}

// httpReceiver is an OTLP/HTTP profiles endpoint for httptest. It decodes
// the body as the collector does (gzip only when Content-Encoding says so)
// and answers with an empty ExportResponse, or with answer when set.
type httpReceiver struct {
	answer func(http.ResponseWriter)

	mu   sync.Mutex
	reqs []httpRequest
}

func (r *httpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, err := otlptest.ReadBody(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	in := pprofileotlp.NewExportRequest()
	if err := in.UnmarshalProto(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	got := httpRequest{method: req.Method, path: req.URL.Path, header: req.Header.Clone(), profiles: pprofile.NewProfiles()}
	in.Profiles().CopyTo(got.profiles)
	r.mu.Lock()
	r.reqs = append(r.reqs, got)
	r.mu.Unlock()
	if r.answer != nil {
		r.answer(w)
		return
	}
	writeResponse(w, pprofileotlp.NewExportResponse())
}

func (r *httpReceiver) requests() []httpRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]httpRequest(nil), r.reqs...)
}

func writeResponse(w http.ResponseWriter, resp pprofileotlp.ExportResponse) {
	b, err := resp.MarshalProto()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// export sends testProfiles through a client for cfg.
func export(t *testing.T, cfg Config) error {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	profiles, _ := testProfiles(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Export(ctx, profiles)
}

func TestHTTPExport(t *testing.T) {
	_, prof := testProfiles(t)
	for name, tc := range map[string]struct {
		endpoint    func(addr string) string
		insecure    bool
		compression string
		encoding    string // the Content-Encoding that must arrive
	}{
		"http URL":                 {endpoint: func(a string) string { return "http://" + a }},
		"http URL ending in /":     {endpoint: func(a string) string { return "http://" + a + "/" }, compression: "none"},
		"host:port, insecure":      {endpoint: func(a string) string { return a }, insecure: true},
		"gzip":                     {endpoint: func(a string) string { return "http://" + a }, compression: "gzip", encoding: "gzip"},
		"gzip, host:port insecure": {endpoint: func(a string) string { return a }, insecure: true, compression: "gzip", encoding: "gzip"},
	} {
		t.Run(name, func(t *testing.T) {
			rcv := &httpReceiver{}
			srv := httptest.NewServer(rcv)
			defer srv.Close()
			err := export(t, Config{
				Protocol:    ProtocolHTTPProtobuf,
				Endpoint:    tc.endpoint(srv.Listener.Addr().String()),
				Insecure:    tc.insecure,
				Compression: tc.compression,
				Headers:     map[string]string{"api-key": "k", "x-tenant": "t1"},
			})
			if err != nil {
				t.Fatal(err)
			}
			reqs := rcv.requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.method != http.MethodPost || r.path != "/v1development/profiles" {
				t.Errorf("%s %s, want POST /v1development/profiles", r.method, r.path)
			}
			for k, want := range map[string]string{
				"Content-Type":     "application/x-protobuf",
				"Content-Encoding": tc.encoding,
				"Api-Key":          "k",
				"X-Tenant":         "t1",
			} {
				if got := r.header.Values(k); strings.Join(got, ",") != want {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			checkProfiles(t, r.profiles, prof)
		})
	}
}

// A configured Content-Type cannot turn the protobuf body into something
// else.
func TestHTTPHeadersDoNotChangeTheEncoding(t *testing.T) {
	rcv := &httpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	err := export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: srv.URL, Headers: map[string]string{"Content-Type": "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	if reqs := rcv.requests(); len(reqs) != 1 || reqs[0].header.Get("Content-Type") != "application/x-protobuf" {
		t.Errorf("requests %+v: want one of application/x-protobuf", reqs)
	}
}

// writeCA writes the certificate of an httptest TLS server to a PEM file,
// for otlptls.Files.Certificate.
func writeCA(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHTTPExportOverTLS(t *testing.T) {
	rcv := &httpReceiver{}
	srv := httptest.NewTLSServer(rcv)
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	ca := otlptls.Files{Certificate: writeCA(t, srv)}

	err := export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: "https://" + addr})
	if err == nil || !strings.Contains(err.Error(), "x509: certificate signed by unknown authority") {
		t.Errorf("without the CA: error %v, want an unknown authority", err)
	}
	// No scheme: https, whose CA is the file's; a path is kept.
	if err := export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: addr, TLS: ca, Compression: "gzip"}); err != nil {
		t.Fatal(err)
	}
	if err := export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: "https://" + addr + "/gw/v1development/profiles", TLS: ca}); err != nil {
		t.Fatal(err)
	}
	// insecure makes a scheme-less endpoint http, which a TLS server refuses.
	err = export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: addr, Insecure: true, TLS: ca})
	want := "export profiles: POST http://" + addr + "/v1development/profiles: 400 Bad Request: Client sent an HTTP request to an HTTPS server."
	if err == nil || err.Error() != want {
		t.Errorf("insecure: error %v\nwant %s", err, want)
	}

	reqs := rcv.requests()
	if len(reqs) != 2 || reqs[0].path != "/v1development/profiles" || reqs[1].path != "/gw/v1development/profiles" ||
		reqs[0].header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("requests %+v: want two, the first gzip'd to /v1development/profiles, the second to /gw/v1development/profiles", reqs)
	}
	_, prof := testProfiles(t)
	for _, r := range reqs {
		checkProfiles(t, r.profiles, prof)
	}
}

func TestHTTPExportOverMutualTLS(t *testing.T) {
	clientCA := otlptest.NewCA(t)
	rcv := &httpReceiver{}
	srv := httptest.NewUnstartedServer(rcv)
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA.Pool}
	srv.StartTLS()
	defer srv.Close()
	endpoint := "https://" + srv.Listener.Addr().String()
	ca := writeCA(t, srv)

	err := export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: endpoint, TLS: otlptls.Files{Certificate: ca}})
	if err == nil || !strings.Contains(err.Error(), "tls: certificate required") {
		t.Errorf("without a client certificate: error %v, want certificate required", err)
	}
	client := clientCA.Issue(t, "client")
	err = export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: endpoint,
		TLS: otlptls.Files{Certificate: ca, ClientCertificate: client.CertFile, ClientKey: client.KeyFile}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestHTTPExportPartialSuccess(t *testing.T) {
	rcv := &httpReceiver{answer: func(w http.ResponseWriter) {
		resp := pprofileotlp.NewExportResponse()
		resp.PartialSuccess().SetRejectedProfiles(2)
		resp.PartialSuccess().SetErrorMessage("2 profiles too old")
		writeResponse(w, resp)
	}}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	err := export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: srv.URL})
	if want := "export profiles: 2 rejected: 2 profiles too old"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestHTTPExportFailures(t *testing.T) {
	status, err := proto.Marshal(&spb.Status{Code: 3, Message: "unknown field 99"})
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		answer func(http.ResponseWriter)
		want   string // after "export profiles: POST <url>: "
	}{
		"500 with text": {
			answer: func(w http.ResponseWriter) { http.Error(w, "boom", http.StatusInternalServerError) },
			want:   "500 Internal Server Error: boom",
		},
		"400 with an OTLP status": {
			answer: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write(status)
			},
			want: "400 Bad Request: unknown field 99",
		},
		"503 with a long body": {
			answer: func(w http.ResponseWriter) {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = w.Write([]byte(strings.Repeat("x", 1000)))
			},
			want: "503 Service Unavailable: " + strings.Repeat("x", 256) + "…",
		},
		"404 without a body": {
			answer: func(w http.ResponseWriter) { w.WriteHeader(http.StatusNotFound) },
			want:   "404 Not Found: empty body",
		},
		"200 with a body that is no response": {
			answer: func(w http.ResponseWriter) { _, _ = w.Write([]byte{0xff, 0xff}) },
			want:   "200 OK: unreadable response: ",
		},
		"200 with a body over 1 MiB": {
			answer: func(w http.ResponseWriter) { _, _ = w.Write(make([]byte, 1<<20+1)) },
			want:   "200 OK: response body over 1048576 bytes",
		},
	} {
		rcv := &httpReceiver{answer: tc.answer}
		srv := httptest.NewServer(rcv)
		err := export(t, Config{Protocol: ProtocolHTTPProtobuf, Endpoint: srv.URL})
		srv.Close()
		want := "export profiles: POST " + srv.URL + "/v1development/profiles: " + tc.want
		if err == nil || !strings.HasPrefix(err.Error(), want) || (!strings.HasSuffix(tc.want, ": ") && err.Error() != want) {
			t.Errorf("%s: error %v\nwant %s", name, err, want)
		}
		if n := len(rcv.requests()); n != 1 {
			t.Errorf("%s: %d requests, want 1 (no retries)", name, n)
		}
	}
}

// Each export is bounded by its context, as over gRPC.
func TestHTTPExportTimesOutWithItsContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := New(Config{Protocol: ProtocolHTTPProtobuf, Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	profiles, _ := testProfiles(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = c.Export(ctx, profiles)
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("error %v after %v, want the context's deadline", err, time.Since(start))
	}
}

func TestProfilesURL(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		insecure bool
		want     string
	}{
		{"collector:4318", false, "https://collector:4318/v1development/profiles"},
		{"collector:4318", true, "http://collector:4318/v1development/profiles"},
		{"collector", false, "https://collector/v1development/profiles"},
		{"collector:4318/custom", true, "http://collector:4318/custom"},
		{"http://collector:4318", false, "http://collector:4318/v1development/profiles"},
		{"http://collector:4318/", false, "http://collector:4318/v1development/profiles"},
		{"https://collector:4318", true, "https://collector:4318/v1development/profiles"},
		{"https://gw.example.com/otlp/v1development/profiles", false, "https://gw.example.com/otlp/v1development/profiles"},
		{"https://gw.example.com/p?tenant=a", false, "https://gw.example.com/p?tenant=a"},
		{"https://[::1]:4318", false, "https://[::1]:4318/v1development/profiles"},
	} {
		u, err := profilesURL(tc.endpoint, tc.insecure)
		if err != nil || u.String() != tc.want {
			t.Errorf("%q insecure=%v: %v (%v), want %s", tc.endpoint, tc.insecure, u, err, tc.want)
		}
	}
	for endpoint, want := range map[string]string{
		"ftp://collector:21": "want http://, https:// or host:port",
		"http://":            "no host",
		"http://[::1":        `parse "http://[::1": missing ']' in host`,
	} {
		if _, err := profilesURL(endpoint, false); err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %s", endpoint, err, want)
		}
	}
}

func TestNewRejectsBadHTTPConfig(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg  Config
		want string
	}{
		"json": {Config{Protocol: "http/json", Endpoint: "collector:4318"},
			`otlp profiles protocol "http/json": want grpc or http/protobuf`},
		"scheme": {Config{Protocol: ProtocolHTTPProtobuf, Endpoint: "ftp://collector:4318"},
			`otlp profiles endpoint "ftp://collector:4318": want http://, https:// or host:port`},
		"no host": {Config{Protocol: ProtocolHTTPProtobuf, Endpoint: "https://"},
			`otlp profiles endpoint "https://": no host`},
		"compression": {Config{Protocol: ProtocolHTTPProtobuf, Endpoint: "collector:4318", Compression: "zstd"},
			`otlp profiles compression "zstd": want gzip or none`},
		"CA file": {Config{Protocol: ProtocolHTTPProtobuf, Endpoint: "collector:4318", TLS: otlptls.Files{Certificate: "/nonexistent/ca.pem"}},
			"load otlp certificate: open /nonexistent/ca.pem: no such file or directory"},
	} {
		c, err := New(tc.cfg)
		if err == nil {
			c.Close()
		}
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %s", name, err, tc.want)
		}
	}
	// Plaintext needs no certificate, as over gRPC.
	c, err := New(Config{Protocol: ProtocolHTTPProtobuf, Endpoint: "http://collector:4318", TLS: otlptls.Files{Certificate: "/nonexistent/ca.pem"}})
	if err != nil {
		t.Fatalf("http endpoint with a CA file: %v", err)
	}
	if c.Target() != "http://collector:4318/v1development/profiles" {
		t.Errorf("target %s", c.Target())
	}
	c.Close()
	// A password in the URL stays out of the log and the errors.
	c, err = New(Config{Protocol: ProtocolHTTPProtobuf, Endpoint: "http://weft:secret@collector:4318"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Target() != "http://weft:xxxxx@collector:4318/v1development/profiles" {
		t.Errorf("target %s", c.Target())
	}
	c.Close()
}
