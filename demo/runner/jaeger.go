package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// jaegerConfig is the demo's Jaeger: the all-in-one pieces it needs (OTLP
// in, memory storage, the query API) on the demo's ports. The built-in
// all-in-one configuration would also take 4317, 16686 and a dozen other
// well-known ports, and trace its own queries to localhost:4317.
func jaegerConfig(p ports) string {
	return fmt.Sprintf(`# Written by demo/runner on every start; edits are overwritten.
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
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
      demo_store:
        memory:
          max_traces: 100000
  jaeger_query:
    enable_tracing: false
    storage:
      traces: demo_store
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d

receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%d

processors:
  batch:
    timeout: 200ms

exporters:
  jaeger_storage_exporter:
    trace_storage: demo_store
`, p.jaegerQuery, p.jaegerQueryGRPC, p.jaegerOTLP)
}

// jaegerAPI is a client of Jaeger's HTTP query API, the one its UI uses.
type jaegerAPI struct {
	base   string // http://127.0.0.1:PORT
	client *http.Client
}

func newJaegerAPI(port int) jaegerAPI {
	return jaegerAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), client: &http.Client{Timeout: 10 * time.Second}}
}

// The API's JSON, as far as the demo reads it.
type (
	apiResponse struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Code int    `json:"code"`
			Msg  string `json:"msg"`
		} `json:"errors"`
	}
	apiTrace struct {
		TraceID   string                `json:"traceID"`
		Spans     []apiSpan             `json:"spans"`
		Processes map[string]apiProcess `json:"processes"`
	}
	apiSpan struct {
		TraceID       string   `json:"traceID"`
		SpanID        string   `json:"spanID"`
		OperationName string   `json:"operationName"`
		References    []apiRef `json:"references"`
		StartTime     int64    `json:"startTime"` // µs since the epoch
		Duration      int64    `json:"duration"`  // µs
		Tags          []apiTag `json:"tags"`
		ProcessID     string   `json:"processID"`
	}
	apiRef struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	}
	apiTag struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
	apiProcess struct {
		ServiceName string `json:"serviceName"`
	}
)

// span is one span of a trace, flattened for the tree and the checks.
type span struct {
	traceID, id, parent string
	service, name, kind string // kind: server, client, ...
	start               time.Time
	dur                 time.Duration
	tags                map[string]string
}

// trace is one trace as Jaeger returned it.
type trace struct {
	id    string
	spans []span
}

// begin is the start of the trace's earliest span.
func (t trace) begin() time.Time {
	var b time.Time
	for i, s := range t.spans {
		if i == 0 || s.start.Before(b) {
			b = s.start
		}
	}
	return b
}

func (t trace) byID(id string) (span, bool) {
	for _, s := range t.spans {
		if s.id == id {
			return s, true
		}
	}
	return span{}, false
}

// convert flattens the API's trace: the service from the span's process,
// the parent from its CHILD_OF reference, the kind from its span.kind tag.
func convert(at apiTrace) trace {
	t := trace{id: at.TraceID}
	for _, as := range at.Spans {
		s := span{
			traceID: as.TraceID, id: as.SpanID, name: as.OperationName,
			service: at.Processes[as.ProcessID].ServiceName,
			start:   time.UnixMicro(as.StartTime), dur: time.Duration(as.Duration) * time.Microsecond,
			tags: map[string]string{},
		}
		for _, r := range as.References {
			if r.RefType == "CHILD_OF" && r.TraceID == as.TraceID {
				s.parent = r.SpanID
			}
		}
		for _, tag := range as.Tags {
			s.tags[tag.Key] = fmt.Sprint(tag.Value)
		}
		s.kind = s.tags["span.kind"]
		t.spans = append(t.spans, s)
	}
	slices.SortStableFunc(t.spans, func(a, b span) int { return a.start.Compare(b.start) })
	return t
}

func (j jaegerAPI) get(ctx context.Context, path string, q url.Values, data any) error {
	u := j.base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("jaeger query %s: %w", u, err)
	}
	resp, err := j.client.Do(req)
	if err != nil {
		return fmt.Errorf("jaeger query: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("jaeger query %s: %w", u, err)
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return fmt.Errorf("jaeger query %s: %s: %w", u, resp.Status, err)
	}
	if len(r.Errors) > 0 {
		return fmt.Errorf("jaeger query %s: %s: %s", u, resp.Status, r.Errors[0].Msg)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("jaeger query %s: %s", u, resp.Status)
	}
	if string(r.Data) == "null" || len(r.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Data, data); err != nil {
		return fmt.Errorf("jaeger query %s: %w", u, err)
	}
	return nil
}

// services lists the services Jaeger has spans of.
func (j jaegerAPI) services(ctx context.Context) ([]string, error) {
	var s []string
	err := j.get(ctx, "/api/services", nil, &s)
	return s, err
}

// search returns the traces holding a span of service that started
// between from and to.
func (j jaegerAPI) search(ctx context.Context, service string, from, to time.Time) ([]trace, error) {
	q := url.Values{
		"service": {service},
		"start":   {strconv.FormatInt(from.UnixMicro(), 10)},
		"end":     {strconv.FormatInt(to.UnixMicro(), 10)},
		"limit":   {"1000"},
	}
	var ats []apiTrace
	if err := j.get(ctx, "/api/traces", q, &ats); err != nil {
		return nil, err
	}
	out := make([]trace, 0, len(ats))
	for _, at := range ats {
		out = append(out, convert(at))
	}
	return out, nil
}

// trace fetches one trace by id.
func (j jaegerAPI) trace(ctx context.Context, id string) (trace, error) {
	var ats []apiTrace
	if err := j.get(ctx, "/api/traces/"+url.PathEscape(id), nil, &ats); err != nil {
		return trace{}, err
	}
	if len(ats) != 1 {
		return trace{}, fmt.Errorf("jaeger query /api/traces/%s: %d traces", id, len(ats))
	}
	return convert(ats[0]), nil
}

// traceURL is where a reader can fetch the trace themselves.
func (j jaegerAPI) traceURL(id string) string { return j.base + "/api/traces/" + id }
