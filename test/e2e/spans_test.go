package e2e

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// span is a received span flattened for assertions.
type span struct {
	service string
	res     map[string]any
	name    string
	kind    tracepb.Span_SpanKind
	trace   string
	id      string
	parent  string
	attrs   map[string]any
	dur     time.Duration
	err     bool
}

func flatten(recs []otlptest.Record) []span {
	out := make([]span, 0, len(recs))
	for _, r := range recs {
		s := r.Span
		out = append(out, span{
			service: r.ServiceName,
			res:     r.Resource,
			name:    s.Name,
			kind:    s.Kind,
			trace:   hex.EncodeToString(s.TraceId),
			id:      hex.EncodeToString(s.SpanId),
			parent:  hex.EncodeToString(s.ParentSpanId),
			attrs:   otlptest.Attrs(s.Attributes),
			dur:     time.Duration(s.EndTimeUnixNano - s.StartTimeUnixNano),
			err:     s.Status != nil && s.Status.Code == tracepb.Status_STATUS_CODE_ERROR,
		})
	}
	return out
}

func (s span) String() string {
	return fmt.Sprintf("%s %s %s %v trace=%s span=%s parent=%s %v", s.service, s.kind, s.name, s.dur, s.trace, s.id, s.parent, s.attrs)
}

func attrInt(s span, k string) int64 {
	switch v := s.attrs[k].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	}
	return -1
}

// waitSpans waits until the receiver holds at least n spans matching keep,
// then a little longer to catch extras that should not exist.
func waitSpans(t *testing.T, rcv *otlptest.Receiver, n int, timeout time.Duration, keep func(span) bool) []span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var got []span
	for {
		got = got[:0]
		for _, s := range flatten(rcv.Spans()) {
			if keep(s) {
				got = append(got, s)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(got) < n {
		t.Fatalf("got %d spans, want %d:\n%s", len(got), n, dump(got))
	}
	time.Sleep(exportLag) // no extras
	got = got[:0]
	for _, s := range flatten(rcv.Spans()) {
		if keep(s) {
			got = append(got, s)
		}
	}
	return got
}

// collectSpans waits up to timeout for n spans and returns what arrived,
// for checks that judge a share of many requests rather than each one.
func collectSpans(t *testing.T, rcv *otlptest.Receiver, n int, timeout time.Duration) []span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(rcv.Spans()) < n && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(exportLag) // no extras
	got := flatten(rcv.Spans())
	if len(got) < n {
		t.Logf("%d spans of %d after %v", len(got), n, timeout)
	}
	return got
}

// quiesce waits until no span has arrived for twice exportLag (at most
// max), so that a reset leaves no span of earlier requests on its way.
func quiesce(rcv *otlptest.Receiver, max time.Duration) {
	deadline := time.Now().Add(max)
	last, since := len(rcv.Spans()), time.Now()
	for time.Since(since) < 2*exportLag && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		if n := len(rcv.Spans()); n != last {
			last, since = n, time.Now()
		}
	}
}

// dumpMax bounds a dump so that a failure's last lines in a log still
// name the test.
const dumpMax = 40

func dump(ss []span) string {
	var b strings.Builder
	for i, s := range ss {
		if i == dumpMax {
			fmt.Fprintf(&b, "… and %d more\n", len(ss)-dumpMax)
			break
		}
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func TestGoNetHTTPServer(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startServer(t, "-mode=nethttp")
	startWeft(t, rcv, "--pid="+strconv.Itoa(srv.Pid()))

	base := "http://" + addr
	type req struct {
		path   string
		status int
	}
	var sent []req
	for range 4 {
		get(t, base+"/hello?secret=1")
		sent = append(sent, req{"/hello", 200})
	}
	for range 3 {
		get(t, base+"/sleep?ms=150")
		sent = append(sent, req{"/sleep", 200})
	}
	for _, code := range []int{503, 404} {
		get(t, fmt.Sprintf("%s/status/%d", base, code))
		sent = append(sent, req{fmt.Sprintf("/status/%d", code), code})
	}
	// keep-alive: several requests on one connection
	keepAlive(t, base+"/hello", 3)
	sent = append(sent, req{"/hello", 200}, req{"/hello", 200}, req{"/hello", 200})

	got := waitSpans(t, rcv, len(sent), 20*time.Second, func(s span) bool { return s.service == "websrv" })
	if len(got) != len(sent) {
		t.Fatalf("%d requests gave %d spans:\n%s", len(sent), len(got), dump(got))
	}
	for i, s := range got {
		want := sent[i]
		if s.kind != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("span %d kind %v", i, s.kind)
		}
		if s.attrs["url.path"] != want.path || attrInt(s, "http.response.status_code") != int64(want.status) {
			t.Errorf("span %d: %s, want %s %d", i, s, want.path, want.status)
		}
		if s.attrs["http.request.method"] != "GET" || s.attrs["network.protocol.version"] != "1.1" ||
			s.attrs["user_agent.original"] != userAgent ||
			s.attrs["client.address"] != "127.0.0.1" || s.attrs["server.address"] != "127.0.0.1" {
			t.Errorf("span %d attributes: %s", i, s)
		}
		if _, ok := s.attrs["url.query"]; ok {
			t.Errorf("span %d exported the query string", i)
		}
		if s.err != (want.status >= 500) {
			t.Errorf("span %d error status %v for %d", i, s.err, want.status)
		}
		if strings.HasPrefix(want.path, "/status/") {
			if s.name != "GET /status/{id}" {
				t.Errorf("span %d name %q", i, s.name)
			}
		} else if s.name != "GET "+want.path {
			t.Errorf("span %d name %q", i, s.name)
		}
		if want.path == "/sleep" && (s.dur < 150*time.Millisecond || s.dur > 2*time.Second) {
			t.Errorf("sleep span lasted %v, handler sleeps 150ms", s.dur)
		}
		if s.res["process.pid"] != int64(srv.Pid()) {
			t.Errorf("span %d resource pid %v, want %d", i, s.res["process.pid"], srv.Pid())
		}
		if s.parent != "" {
			t.Errorf("span %d has parent %s", i, s.parent)
		}
	}
}

func TestPythonHTTPServer(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("<html>weft</html>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	py := exec.Command("python3", "-m", "http.server", "--bind", "127.0.0.1", strconv.Itoa(port))
	py.Dir = dir
	py.Env = append(os.Environ(), "OTEL_SERVICE_NAME=pyfiles")
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { py.Process.Kill(); py.Wait() })
	waitListening(t, port)
	startWeft(t, rcv, "--port="+strconv.Itoa(port))

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	curl(t, base+"/index.html")
	curl(t, "-o", "/dev/null", base+"/missing")
	curl(t, "-I", base+"/index.html")
	got := waitSpans(t, rcv, 3, 20*time.Second, func(s span) bool { return s.service == "pyfiles" })
	if len(got) != 3 {
		t.Fatalf("3 requests gave %d spans:\n%s", len(got), dump(got))
	}
	for i, want := range []struct {
		method, path string
		status       int64
	}{{"GET", "/index.html", 200}, {"GET", "/missing", 404}, {"HEAD", "/index.html", 200}} {
		s := got[i]
		if s.attrs["http.request.method"] != want.method || s.attrs["url.path"] != want.path || attrInt(s, "http.response.status_code") != want.status {
			t.Errorf("span %d: %s, want %v", i, s, want)
		}
		if s.err {
			t.Errorf("span %d marked error: a 4xx is not a server error", i)
		}
	}
	if attrInt(got[0], "http.response.body.size") != 18 {
		t.Errorf("body size: %s", got[0])
	}
}

// keepAlive sends n requests over one connection.
func keepAlive(t *testing.T, url string, n int) {
	t.Helper()
	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	for range n {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("User-Agent", userAgent)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func waitListening(t *testing.T, port int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if listening(port) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %d", port)
}

// A handler that calls another local server on its own thread: the client
// span it sends is the child of the server span it is serving.
func TestParentChildOnSameThread(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	back, backAddr := startServer(t, "-mode=nethttp")
	front, frontAddr := startServer(t, "-mode=thread", "-downstream="+backAddr)
	startWeft(t, rcv, "--pid="+strconv.Itoa(front.Pid()))

	for range 3 {
		if out := get(t, "http://"+frontAddr+"/call"); !strings.Contains(out, "downstream said 200") {
			t.Fatalf("front answered %q", out)
		}
	}
	_ = back
	got := waitSpans(t, rcv, 6, 20*time.Second, func(span) bool { return true })
	var servers, clients []span
	for _, s := range got {
		switch s.kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			servers = append(servers, s)
		case tracepb.Span_SPAN_KIND_CLIENT:
			clients = append(clients, s)
		}
	}
	if len(servers) != 3 || len(clients) != 3 {
		t.Fatalf("want 3 server and 3 client spans:\n%s", dump(got))
	}
	for i := range 3 {
		srv, cli := servers[i], clients[i]
		if srv.attrs["url.path"] != "/call" || cli.attrs["url.path"] != "/hello" {
			t.Errorf("pair %d: %s / %s", i, srv, cli)
		}
		if cli.trace != srv.trace || cli.parent != srv.id {
			t.Errorf("pair %d: client not a child of the server span:\n%s\n%s", i, srv, cli)
		}
		if cli.attrs["server.port"] == nil || attrInt(cli, "http.response.status_code") != 200 {
			t.Errorf("client attributes: %s", cli)
		}
		if cli.dur > srv.dur {
			t.Errorf("client span (%v) longer than its parent (%v)", cli.dur, srv.dur)
		}
	}
}
