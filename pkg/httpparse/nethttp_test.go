package httpparse

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestNetHTTPWire parses what net/http itself writes and checks the fields
// against the values it was given, for every capture size from tiny to
// full, so the cut-capture paths see realistic byte streams too.
func TestNetHTTPWire(t *testing.T) {
	type reqCase struct {
		method, url, body string
		chunked           bool
		header            http.Header
	}
	reqs := []reqCase{
		{method: "GET", url: "http://example.com/a/b?x=1"},
		{method: "POST", url: "http://example.com/upload", body: "field=value&other=2"},
		{method: "PUT", url: "http://example.com/put", body: strings.Repeat("z", 3000), chunked: true},
		{method: "DELETE", url: "http://example.com/item/7", header: http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}},
	}
	var wire bytes.Buffer
	for _, c := range reqs {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		r, err := http.NewRequest(c.method, c.url, body)
		if err != nil {
			t.Fatal(err)
		}
		if c.chunked {
			r.ContentLength = -1
			r.Body = io.NopCloser(strings.NewReader(c.body))
		}
		for k, v := range c.header {
			r.Header[k] = v
		}
		if err := r.Write(&wire); err != nil {
			t.Fatal(err)
		}
	}
	ev := doneEvents(t, ModeRequest, wire.Bytes())
	if len(ev) != len(reqs) {
		t.Fatalf("got %d requests, want %d", len(ev), len(reqs))
	}
	for i, c := range reqs {
		m := ev[i]
		path, query := SplitTarget(m.Target)
		wantPath, wantQuery, _ := strings.Cut(strings.TrimPrefix(c.url, "http://example.com"), "?")
		if m.Method != c.method || path != wantPath || query != wantQuery || m.Host != "example.com" ||
			m.BodyBytes != int64(len(c.body)) || m.Chunked != c.chunked || m.TraceParent != c.header.Get("Traceparent") {
			t.Errorf("request %d: %+v", i, m)
		}
	}

	// Responses as read back by net/http, so framing agrees with it.
	respWire := "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n4\r\ndefg\r\n0\r\nX-T: 1\r\n\r\n" +
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n" +
		"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
	br := bufio.NewReader(strings.NewReader(respWire))
	var want []int64
	var codes []int
	for {
		r, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		b, _ := io.ReadAll(r.Body)
		want = append(want, int64(len(b)))
		codes = append(codes, r.StatusCode)
	}
	rev := doneEvents(t, ModeResponse, []byte(respWire))
	if len(rev) != len(want) || len(want) != 4 {
		t.Fatalf("got %d responses, net/http read %d", len(rev), len(want))
	}
	for i := range want {
		if rev[i].StatusCode != codes[i] || rev[i].BodyBytes != want[i] {
			t.Errorf("response %d: status %d body %d, net/http: %d %d", i, rev[i].StatusCode, rev[i].BodyBytes, codes[i], want[i])
		}
	}

	// Every capture size: messages are never invented, and a fully
	// captured stream gives the same results.
	for n := 1; n <= len(wire.Bytes()); n += 7 {
		p := NewParser(ModeRequest)
		data := wire.Bytes()
		var done int
		for i := 0; len(data) > 0; i++ {
			seg := data[:min(len(data), 512)]
			for _, m := range p.Feed(seg[:min(len(seg), n)], len(seg), uint64(i+1)) {
				if m.Complete {
					done++
				}
			}
			data = data[len(seg):]
		}
		if done > len(reqs) || (n >= 512 && done != len(reqs)) {
			t.Fatalf("capture %d: %d requests completed, %d sent", n, done, len(reqs))
		}
	}
}

// doneEvents feeds data in 100-byte segments and returns the terminal events.
func doneEvents(t *testing.T, mode Mode, data []byte) []Message {
	t.Helper()
	p := NewParser(mode)
	var out []Message
	for i := 0; len(data) > 0; i++ {
		n := min(len(data), 100)
		for _, m := range p.Feed(data[:n], n, uint64(i+1)) {
			if m.Phase != PhaseHead {
				out = append(out, m)
			}
		}
		data = data[n:]
	}
	if p.Errors().Total() != 0 {
		t.Fatalf("errors: %v", p.Errors().Map())
	}
	return out
}
