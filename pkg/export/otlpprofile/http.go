package otlpprofile

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/weftdev/weft/pkg/export/otlpurl"
)

// profilesPath is the path of the profiles signal in OTLP/HTTP, the one
// the collector's otlpreceiver serves them on.
const profilesPath = "/v1development/profiles"

// maxResponseBody bounds how much of a response is read: far more than
// any ExportResponse or error status, and the server is not trusted.
const maxResponseBody = 1 << 20

// maxErrorExcerpt is how much of an error response's body an error quotes.
const maxErrorExcerpt = 256

// httpSender exports over OTLP/HTTP with protobuf bodies.
type httpSender struct {
	client *http.Client
	url    string
	// shown is url for errors and the log, without a password.
	shown    string
	headers  map[string]string
	compress bool
}

func newHTTPSender(cfg Config, compress bool) (*httpSender, error) {
	u, err := profilesURL(cfg.Endpoint, cfg.Insecure)
	if err != nil {
		return nil, fmt.Errorf("otlp profiles endpoint %q: %w", cfg.Endpoint, err)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme == "https" {
		tlsCfg, err := cfg.TLS.Config()
		if err != nil {
			return nil, err
		}
		transport.TLSClientConfig = tlsCfg
	}
	// No timeout on the client: each export's context has one.
	return &httpSender{client: &http.Client{Transport: transport}, url: u.String(), shown: u.Redacted(), headers: cfg.Headers, compress: compress}, nil
}

// profilesURL is the URL profiles are posted to: the endpoint as it is,
// except that without a scheme it is https (http when insecure) and
// without a path it gets profilesPath. "/" counts as no path: no receiver
// takes profiles there, and "http://collector:4318/" means the collector.
func profilesURL(endpoint string, insecure bool) (*url.URL, error) {
	u, err := otlpurl.Parse(endpoint, insecure)
	if err != nil {
		return nil, err
	}
	if u.Path == "" || u.Path == "/" {
		u.Path, u.RawPath = profilesPath, ""
	}
	return u, nil
}

func (s *httpSender) export(ctx context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	resp := pprofileotlp.NewExportResponse()
	body, err := req.MarshalProto()
	if err != nil {
		return resp, fmt.Errorf("marshal the request: %w", err)
	}
	if s.compress {
		if body, err = gzipped(body); err != nil {
			return resp, fmt.Errorf("gzip the request: %w", err)
		}
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return resp, fmt.Errorf("request to %s: %w", s.shown, err)
	}
	for k, v := range s.headers {
		hreq.Header.Set(k, v)
	}
	// After the configured headers, which must not change the encoding.
	hreq.Header.Set("Content-Type", "application/x-protobuf")
	if s.compress {
		hreq.Header.Set("Content-Encoding", "gzip")
	}
	hresp, err := s.client.Do(hreq)
	if err != nil {
		return resp, err // a *url.Error: "Post \"<url>\": ...", password hidden
	}
	defer hresp.Body.Close()
	b, readErr := io.ReadAll(io.LimitReader(hresp.Body, maxResponseBody+1))
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		return resp, fmt.Errorf("POST %s: %s: %s", s.shown, hresp.Status, errorDetail(hresp.Header.Get("Content-Type"), b))
	}
	switch {
	case readErr != nil:
		return resp, fmt.Errorf("POST %s: %s: read the response: %w", s.shown, hresp.Status, readErr)
	case len(b) > maxResponseBody:
		return resp, fmt.Errorf("POST %s: %s: response body over %d bytes", s.shown, hresp.Status, maxResponseBody)
	}
	if err := resp.UnmarshalProto(b); err != nil {
		return resp, fmt.Errorf("POST %s: %s: unreadable response: %w", s.shown, hresp.Status, err)
	}
	return resp, nil
}

// errorDetail says what an error response's body says: the message of
// the google.rpc.Status an OTLP receiver answers with, else the start of
// the body.
func errorDetail(contentType string, body []byte) string {
	if contentType == "application/x-protobuf" {
		var st spb.Status
		if proto.Unmarshal(body, &st) == nil && st.GetMessage() != "" {
			return st.GetMessage()
		}
	}
	excerpt := body
	if len(excerpt) > maxErrorExcerpt {
		excerpt = excerpt[:maxErrorExcerpt]
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(excerpt), "\uFFFD"))
	switch {
	case s == "":
		return "empty body"
	case len(body) > maxErrorExcerpt:
		return s + "…"
	}
	return s
}

func gzipped(b []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *httpSender) target() string { return s.shown }

func (s *httpSender) close() error {
	s.client.CloseIdleConnections()
	return nil
}
