package export

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// maxResponseBody is otlptracehttp's default limit on a response body; a
// longer one fails the export there.
const maxResponseBody = 4 << 20

// httpOptions translates the config for otlptracehttp, whose requests go
// through transport.
func (c OTLPConfig) httpOptions(tlsCfg *tls.Config, outcome *rpcOutcome) ([]otlptracehttp.Option, error) {
	u, err := url.Parse(c.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("otlp endpoint %q: %w", c.Endpoint, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("otlp endpoint %q: OTLP/HTTP wants an http:// or https:// URL", c.Endpoint)
	}
	compression := otlptracehttp.NoCompression
	switch c.Compression {
	case "gzip":
		compression = otlptracehttp.GzipCompression
	case "", "none":
	default:
		return nil, fmt.Errorf("otlp compression %q: want gzip or none", c.Compression)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme == "https" {
		transport.TLSClientConfig = tlsCfg
	} else {
		// The SDK refuses an http URL with a TLS configuration, which it
		// may have read from OTEL_EXPORTER_OTLP_CERTIFICATE; nil clears it.
		tlsCfg = nil
	}
	return []otlptracehttp.Option{
		// Scheme, host and path as they are; the scheme sets Insecure.
		otlptracehttp.WithEndpointURL(c.Endpoint),
		otlptracehttp.WithTLSClientConfig(tlsCfg),
		// weft's client, so that the outcome of each request is seen;
		// its timeout is the context's (see httpSender).
		otlptracehttp.WithHTTPClient(&http.Client{Transport: &outcomeTransport{base: transport, outcome: outcome}}),
		otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf),
		otlptracehttp.WithCompression(compression),
		otlptracehttp.WithHeaders(c.Headers),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{
			Enabled:         c.RetryMaxElapsed > 0,
			InitialInterval: c.RetryInitialInterval,
			MaxInterval:     c.RetryMaxInterval,
			MaxElapsedTime:  c.RetryMaxElapsed,
		}),
	}, nil
}

// outcomeTransport records the outcome of each export request, as the
// gRPC interceptor does: otlptracehttp reports a partial success only as
// an opaque error. It reads the response body and puts it back for the SDK.
type outcomeTransport struct {
	base    http.RoundTripper
	outcome *rpcOutcome
}

func (t *outcomeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		t.outcome.set(false, 0)
		return resp, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBody+1))
	resp.Body = replayBody{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	if err != nil || len(b) > maxResponseBody {
		t.outcome.set(false, 0) // the SDK fails the export too
		return resp, nil
	}
	// Parsed as the SDK parses it: a body it cannot read fails the export.
	var r collectortrace.ExportTraceServiceResponse
	switch resp.Header.Get("Content-Type") {
	case "application/x-protobuf":
		err = proto.Unmarshal(b, &r)
	case "application/json":
		if len(b) > 0 {
			err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, &r)
		}
	}
	t.outcome.set(err == nil, r.GetPartialSuccess().GetRejectedSpans())
	return resp, nil
}

// replayBody is a response body that was partly read already.
type replayBody struct {
	io.Reader
	io.Closer
}
