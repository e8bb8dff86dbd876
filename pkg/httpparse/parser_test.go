package httpparse

import (
	"strings"
	"testing"
)

const (
	getReq  = "GET /index.html HTTP/1.1\r\nHost: example.com\r\nUser-Agent: curl/8.5\r\nAccept: */*\r\n\r\n"
	postReq = "POST /api/items HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\nhello world"
	postHd  = "POST /api/items HTTP/1.1\r\nHost: example.com\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\n"
)

func TestRequests(t *testing.T) {
	cases := []parserCase{
		{
			name: "simple GET",
			segs: []seg{s(getReq)},
			want: []string{"done GET /index.html 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "POST with body in one segment",
			segs: []seg{s(postReq)},
			want: []string{"done POST /api/items 1.1 cl=11 body=11 ts=1/1/1 ka"},
		},
		{
			name: "body split across many segments",
			segs: []seg{s(postHd + "he"), s("llo"), s(" wor"), s("ld")},
			want: []string{
				"head POST /api/items 1.1 cl=11 body=2 ts=1/1/0 ka",
				"done POST /api/items 1.1 cl=11 body=11 ts=1/1/4 ka",
			},
		},
		{
			name: "head alone then body",
			segs: []seg{s(postHd), s("hello world")},
			want: []string{
				"head POST /api/items 1.1 cl=11 body=0 ts=1/1/0 ka",
				"done POST /api/items 1.1 cl=11 body=11 ts=1/1/2 ka",
			},
		},
		{
			name: "head split between CR and LF of the blank line",
			segs: []seg{s("GET / HTTP/1.1\r\nHost: a\r\n\r"), s("\n")},
			want: []string{"done GET / 1.1 cl=-1 body=0 ts=1/2/2 ka"},
		},
		{
			name: "head split between the two CRLFs",
			segs: []seg{s("GET / HTTP/1.1\r\nHost: a\r\n"), s("\r\n")},
			want: []string{"done GET / 1.1 cl=-1 body=0 ts=1/2/2 ka"},
		},
		{
			name: "head split after the first CR",
			segs: []seg{s("GET / HTTP/1.1\r\nHost: a\r"), s("\n\r\n")},
			want: []string{"done GET / 1.1 cl=-1 body=0 ts=1/2/2 ka"},
		},
		{
			name: "head split inside header names",
			segs: []seg{s("GET / HTTP/1.1\r\nHo"), s("st: a\r\nUser-Ag"), s("ent: x\r\n\r\n")},
			want: []string{"done GET / 1.1 cl=-1 body=0 ts=1/3/3 ka"},
		},
		{
			name: "head one byte per segment",
			segs: func() []seg {
				var out []seg
				for i := range len("GET /x HTTP/1.1\r\n\r\n") {
					out = append(out, s("GET /x HTTP/1.1\r\n\r\n"[i:i+1]))
				}
				return out
			}(),
			want: []string{"done GET /x 1.1 cl=-1 body=0 ts=1/19/19 ka"},
		},
		{
			name: "half-sent request line",
			segs: []seg{s("GET /inde"), s("x.html HTTP/1.1\r\nHost: a\r\n\r\n")},
			want: []string{"done GET /index.html 1.1 cl=-1 body=0 ts=1/2/2 ka"},
		},
		{
			name: "method split before it can be recognised",
			segs: []seg{s("G"), s("ET / HTTP/1.1\r\n\r\n")},
			want: []string{"done GET / 1.1 cl=-1 body=0 ts=1/2/2 ka"},
		},
		{
			name: "pipelined requests in one segment",
			segs: []seg{s("GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\nHEAD /c HTTP/1.1\r\n\r\n")},
			want: []string{
				"done GET /a 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done GET /b 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done HEAD /c 1.1 cl=-1 body=0 ts=1/1/1 ka",
			},
		},
		{
			name: "pipelined requests spanning segments",
			segs: []seg{
				s("GET /a HTTP/1.1\r\n\r\nPOST /b HTTP/1.1\r\nContent-Length: 4\r\n\r\nab"),
				s("cdGET /c HTTP/1.1\r\n"),
				s("\r\n"),
			},
			want: []string{
				"done GET /a 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"head POST /b 1.1 cl=4 body=2 ts=1/1/0 ka",
				"done POST /b 1.1 cl=4 body=4 ts=1/1/2 ka",
				"done GET /c 1.1 cl=-1 body=0 ts=2/3/3 ka",
			},
		},
		{
			name: "empty lines between messages are skipped",
			segs: []seg{s("\r\nGET /a HTTP/1.1\r\n\r\n\r\n"), s("\r\nGET /b HTTP/1.1\r\n\r\n")},
			want: []string{
				"done GET /a 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done GET /b 1.1 cl=-1 body=0 ts=2/2/2 ka",
			},
		},
		{
			name: "bare LF line endings",
			segs: []seg{s("GET /lf HTTP/1.1\nHost: a\n\n")},
			want: []string{"done GET /lf 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "absolute-form target kept raw",
			segs: []seg{s("GET http://example.com/a/b?x=1 HTTP/1.1\r\n\r\n")},
			want: []string{"done GET http://example.com/a/b?x=1 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "asterisk-form",
			segs: []seg{s("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n")},
			want: []string{"done OPTIONS * 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "all recognised methods",
			segs: []seg{s("PUT /1 HTTP/1.1\r\n\r\nDELETE /2 HTTP/1.1\r\n\r\nTRACE /3 HTTP/1.1\r\n\r\nPATCH /4 HTTP/1.1\r\nContent-Length: 1\r\n\r\nx")},
			want: []string{
				"done PUT /1 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done DELETE /2 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done TRACE /3 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done PATCH /4 1.1 cl=1 body=1 ts=1/1/1 ka",
			},
		},
		{
			name: "CONNECT starts a tunnel",
			segs: []seg{s("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"), s("\x16\x03\x01\x00\xa5\x01\x00"), s("\x17\x03\x03\x00\x20")},
			want: []string{"done CONNECT example.com:443 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "upgrade request: what follows is not parsed",
			segs: []seg{s("GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"), s("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58")},
			want: []string{"done GET /ws 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "Content-Length list of equal values",
			segs: []seg{s("POST / HTTP/1.1\r\nContent-Length: 3, 3\r\n\r\nabc")},
			want: []string{"done POST / 1.1 cl=3 body=3 ts=1/1/1 ka"},
		},
		{
			name: "invalid Content-Length",
			segs: []seg{s("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\nxyz"), s("GET /next HTTP/1.1\r\n\r\n")},
			want: []string{
				"aborted POST / 1.1 cl=-1 body=0 ts=1/1/0 ka err=bad_content_length",
				"done GET /next 1.1 cl=-1 body=0 ts=2/2/2 ka",
			},
			errs: map[Error]uint64{ErrBadContentLength: 1},
		},
		{
			name: "conflicting Content-Length",
			segs: []seg{s("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nabcdef")},
			want: []string{"aborted POST / 1.1 cl=5 body=0 ts=1/1/0 ka err=bad_content_length"},
			errs: map[Error]uint64{ErrBadContentLength: 1},
		},
		{
			name: "request with non-chunked transfer coding",
			segs: []seg{s("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\nxyz")},
			want: []string{"aborted POST / 1.1 cl=-1 body=0 ts=1/1/0 ka err=bad_transfer_encoding"},
			errs: map[Error]uint64{ErrBadTransferEncoding: 1},
		},
		{
			name: "chunked wins over Content-Length",
			segs: []seg{s("POST / HTTP/1.1\r\nContent-Length: 100\r\nTransfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nGET /n HTTP/1.1\r\n\r\n")},
			want: []string{
				"done POST / 1.1 cl=100 body=3 ts=1/1/1 ka chunked",
				"done GET /n 1.1 cl=-1 body=0 ts=1/1/1 ka",
			},
		},
		{
			name: "malformed header lines are counted and skipped",
			segs: []seg{s("GET / HTTP/1.1\r\nNoColonHere\r\nHost : x\r\n: empty\r\n folded continuation\r\nHost: a\r\n\r\n")},
			want: []string{"done GET / 1.1 cl=-1 body=0 ts=1/1/1 ka"},
			errs: map[Error]uint64{ErrBadHeader: 3},
		},
		{
			name: "garbage where a request should start loses sync until a request line",
			segs: []seg{s("GET / HTTP/1.1\r\n\r\n"), s("garbage\r\n"), s("more garbage"), s("GET /x HTTP/1.1\r\n\r\n")},
			want: []string{
				"done GET / 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done GET /x 1.1 cl=-1 body=0 ts=4/4/4 ka",
			},
			errs: map[Error]uint64{ErrBadRequestLine: 1},
		},
		{
			name: "resync needs a complete valid request line",
			segs: []seg{s("GET / HTTP/1.1\r\n\r\n"), s("junk"), s("GET this is body text\r\n"), s("GET /y HTTP/1.1\r\n\r\n")},
			want: []string{
				"done GET / 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done GET /y 1.1 cl=-1 body=0 ts=4/4/4 ka",
			},
			errs: map[Error]uint64{ErrBadRequestLine: 1},
		},
		{
			name:    "malformed request line at stream start",
			segs:    []seg{s("GET /foo HTTP/9.9\r\n\r\n")},
			notHTTP: true,
			errs:    map[Error]uint64{ErrBadRequestLine: 1},
		},
		{
			name:    "HTTP/0.9 request is not HTTP/1.x",
			segs:    []seg{s("GET /\r\n\r\n")},
			notHTTP: true,
			errs:    map[Error]uint64{ErrBadRequestLine: 1},
		},
		{
			name:  "close in the middle of a body",
			segs:  []seg{s(postHd + "hello")},
			close: true,
			want: []string{
				"head POST /api/items 1.1 cl=11 body=5 ts=1/1/0 ka",
				"aborted POST /api/items 1.1 cl=11 body=5 ts=1/1/0 ka err=incomplete",
			},
			errs: map[Error]uint64{ErrIncomplete: 1},
		},
		{
			name:  "close in the middle of a head",
			segs:  []seg{s("GET /partial HTTP/1.1\r\nHost: a\r\nUser-")},
			close: true,
			want:  []string{"aborted GET /partial 1.1 cl=-1 body=0 ts=1/2/0 ka trunc err=incomplete"},
			errs:  map[Error]uint64{ErrIncomplete: 1},
		},
		{
			name:  "close between messages reports nothing",
			segs:  []seg{s(getReq)},
			close: true,
			want:  []string{"done GET /index.html 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "mid-stream start waits for a request line",
			mid:  true,
			segs: []seg{s("tail of a body"), s("x\r\n\r\n"), s(getReq)},
			want: []string{"done GET /index.html 1.1 cl=-1 body=0 ts=3/3/3 ka"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.mode == ModeDetect {
				c.mode = ModeRequest
			}
			runCase(t, c)
		})
	}
}

func TestKeepAlive(t *testing.T) {
	cases := []struct {
		name string
		mode Mode
		msg  string
		want bool
	}{
		{"1.1 default", ModeRequest, "GET / HTTP/1.1\r\n\r\n", true},
		{"1.1 close", ModeRequest, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
		{"1.1 close any case", ModeRequest, "GET / HTTP/1.1\r\nCONNECTION: Close\r\n\r\n", false},
		{"1.1 close in a token list", ModeRequest, "GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n", false},
		{"1.0 default", ModeRequest, "GET / HTTP/1.0\r\n\r\n", false},
		{"1.0 keep-alive", ModeRequest, "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
		{"1.0 keep-alive and close", ModeRequest, "GET / HTTP/1.0\r\nConnection: keep-alive\r\nConnection: close\r\n\r\n", false},
		{"response 1.1 default", ModeResponse, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true},
		{"response 1.1 close", ModeResponse, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", false},
		{"response 1.0 default", ModeResponse, "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false},
		{"response 1.0 keep-alive", ModeResponse, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", true},
		{"response delimited by close", ModeResponse, "HTTP/1.1 200 OK\r\n\r\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser(c.mode)
			ev := p.Feed([]byte(c.msg), len(c.msg), 1)
			if len(ev) != 1 {
				t.Fatalf("got %d events, want 1", len(ev))
			}
			if ev[0].KeepAlive != c.want {
				t.Errorf("KeepAlive = %v, want %v", ev[0].KeepAlive, c.want)
			}
		})
	}
}

func TestHeaderFields(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		name                string
		msg                 string
		host, ua, tp, targt string
		expect              bool
	}{
		{
			name:  "canonical names",
			msg:   "GET /a HTTP/1.1\r\nHost: example.com\r\nUser-Agent: Go-http-client/1.1\r\ntraceparent: " + tp + "\r\n\r\n",
			host:  "example.com",
			ua:    "Go-http-client/1.1",
			tp:    tp,
			targt: "/a",
		},
		{
			name:  "names in any case, values trimmed, first wins",
			msg:   "GET /b HTTP/1.1\r\nHOST:   h:8080 \t\r\nhost: second\r\nuser-AGENT:\tua\r\nTraceParent: " + tp + "\r\nTRACEPARENT: other\r\n\r\n",
			host:  "h:8080",
			ua:    "ua",
			tp:    tp,
			targt: "/b",
		},
		{
			name:   "expect 100-continue",
			msg:    "PUT /c HTTP/1.1\r\nExpect: 100-Continue\r\nContent-Length: 0\r\n\r\n",
			targt:  "/c",
			expect: true,
		},
		{
			name:  "no interesting headers",
			msg:   "GET /d HTTP/1.1\r\nAccept: */*\r\n\r\n",
			targt: "/d",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser(ModeRequest)
			ev := p.Feed([]byte(c.msg), len(c.msg), 1)
			if len(ev) != 1 {
				t.Fatalf("got %d events, want 1", len(ev))
			}
			m := ev[0]
			if m.Host != c.host || m.UserAgent != c.ua || m.TraceParent != c.tp || m.Target != c.targt || m.Expect100 != c.expect {
				t.Errorf("got host=%q ua=%q tp=%q target=%q expect=%v", m.Host, m.UserAgent, m.TraceParent, m.Target, m.Expect100)
			}
		})
	}
}

// TestStringsOutliveBuffers checks that message strings are copies: the
// caller may reuse its capture buffer after Feed returns.
func TestStringsOutliveBuffers(t *testing.T) {
	buf := []byte("GET /orig HTTP/1.1\r\nHost: h\r\n\r\n")
	p := NewParser(ModeRequest)
	m := p.Feed(buf, len(buf), 1)[0]
	for i := range buf {
		buf[i] = 'X'
	}
	if m.Target != "/orig" || m.Host != "h" {
		t.Fatalf("strings alias the input: target=%q host=%q", m.Target, m.Host)
	}
}

// TestEverySplit feeds message sequences split at every one and every two
// points and checks the terminal events do not depend on where the
// segments were cut.
func TestEverySplit(t *testing.T) {
	cases := []struct {
		name string
		mode Mode
		push []string
		data string
	}{
		{"requests", ModeRequest, nil, getReq + postReq + "GET /q?x=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
		{"chunked request with trailer", ModeRequest, nil, "POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n3\r\nabc\r\n0\r\nX-Sum: 1\r\nY: 2\r\n\r\nGET / HTTP/1.1\r\n\r\n"},
		{"responses", ModeResponse, []string{"GET", "HEAD", "GET"}, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"},
		{"chunked response", ModeResponse, nil, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n"},
	}
	terminal := func(p *Parser, push []string, parts ...string) []string {
		for _, m := range push {
			p.PushRequestMethod(m)
		}
		var out []string
		for i, part := range parts {
			for _, m := range p.Feed([]byte(part), len(part), uint64(i+1)) {
				if m.Phase != PhaseHead {
					m.StartTS, m.HeadTS, m.EndTS = 0, 0, 0
					out = append(out, summary(m))
				}
			}
		}
		if ev := p.Close(99); len(ev) != 0 {
			out = append(out, "unexpected close event "+summary(ev[0]))
		}
		if p.Errors().Total() != 0 {
			out = append(out, "errors")
		}
		return out
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := strings.Join(terminal(NewParser(c.mode), c.push, c.data), "\n")
			if strings.Contains(want, "err") || want == "" {
				t.Fatalf("unsplit parse is wrong:\n%s", want)
			}
			p := NewParser(c.mode)
			for i := 1; i < len(c.data); i++ {
				got := strings.Join(terminal(p, c.push, c.data[:i], c.data[i:]), "\n")
				if got != want {
					t.Fatalf("split at %d:\n got %s\nwant %s", i, got, want)
				}
				for j := i + 1; j < len(c.data); j += 3 {
					got := strings.Join(terminal(p, c.push, c.data[:i], c.data[i:j], c.data[j:]), "\n")
					if got != want {
						t.Fatalf("split at %d,%d:\n got %s\nwant %s", i, j, got, want)
					}
				}
			}
		})
	}
}

func TestCloseResetsForReuse(t *testing.T) {
	p := NewParser(ModeDetect)
	tls := []byte(nonHTTP[1].data)
	p.Feed(tls, len(tls), 1)
	if !p.NotHTTP() {
		t.Fatal("TLS not rejected")
	}
	p.Close(2)
	if p.NotHTTP() || p.Mode() != ModeDetect {
		t.Fatal("Close did not reset the stream state")
	}
	p.PushRequestMethod("HEAD")
	p.Close(3) // clears the method queue too
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	ev := p.Feed(resp, len(resp), 4)
	if len(ev) != 1 || ev[0].BodyBytes != 2 || p.Mode() != ModeResponse {
		t.Fatalf("reused parser: %+v", ev)
	}
}

func TestZeroValueParser(t *testing.T) {
	var p Parser
	ev := p.Feed([]byte(getReq), len(getReq), 1)
	if len(ev) != 1 || !ev[0].Complete || ev[0].Target != "/index.html" || p.Mode() != ModeRequest {
		t.Fatalf("zero value parser: %+v", ev)
	}
}

// Upgrade: h2c is noted on its request only, in any case and in a list.
func TestUpgradeH2C(t *testing.T) {
	p := NewParser(ModeRequest)
	in := "GET / HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: websocket, H2C\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n"
	msgs := p.Feed([]byte(in), len(in), 1)
	if len(msgs) != 1 || !msgs[0].UpgradeH2C {
		t.Fatalf("upgrade request: %+v", msgs)
	}
	p = NewParser(ModeRequest)
	in = "GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n"
	msgs = p.Feed([]byte(in), len(in), 1)
	if len(msgs) != 2 || msgs[0].UpgradeH2C || msgs[1].UpgradeH2C {
		t.Fatalf("websocket and plain requests: %+v", msgs)
	}
}
