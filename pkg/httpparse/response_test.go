package httpparse

import "testing"

func TestResponses(t *testing.T) {
	cases := []parserCase{
		{
			name: "simple response",
			segs: []seg{s("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello")},
			want: []string{"done 200 1.1 cl=5 body=5 ts=1/1/1 ka"},
		},
		{
			name: "status line without reason phrase",
			segs: []seg{s("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")},
			want: []string{"done 200 1.1 cl=0 body=0 ts=1/1/1 ka"},
		},
		{
			name: "100-continue: interim then final",
			push: []string{"POST"},
			segs: []seg{s("HTTP/1.1 100 Continue\r\n\r\n"), s("HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok")},
			want: []string{
				"done 100 1.1 cl=-1 body=0 ts=1/1/1 ka interim",
				"done 201 1.1 cl=2 body=2 ts=2/2/2 ka",
			},
		},
		{
			name: "interim responses do not consume the request method",
			push: []string{"HEAD", "GET"},
			segs: []seg{s("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")},
			want: []string{
				"done 100 1.1 cl=-1 body=0 ts=1/1/1 ka interim",
				"done 103 1.1 cl=-1 body=0 ts=1/1/1 ka interim",
				"done 200 1.1 cl=5 body=0 ts=1/1/1 ka",
				"done 200 1.1 cl=3 body=3 ts=1/1/1 ka",
			},
		},
		{
			name: "HEAD response has no body despite Content-Length",
			push: []string{"HEAD", "GET"},
			segs: []seg{s("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n"), s("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc")},
			want: []string{
				"done 200 1.1 cl=1234 body=0 ts=1/1/1 ka",
				"done 200 1.1 cl=3 body=3 ts=2/2/2 ka",
			},
		},
		{
			name: "HEAD response to a chunked resource",
			push: []string{"HEAD"},
			segs: []seg{s("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")},
			want: []string{"done 200 1.1 cl=-1 body=0 ts=1/1/1 ka chunked"},
		},
		{
			name: "204 and 304 have no body",
			segs: []seg{s("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 500\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")},
			want: []string{
				"done 204 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done 304 1.1 cl=500 body=0 ts=1/1/1 ka",
				"done 200 1.1 cl=1 body=1 ts=1/1/1 ka",
			},
		},
		{
			name:  "body delimited by connection close",
			segs:  []seg{s("HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\nabc"), s("defg"), gap("hi", 100)},
			close: true,
			want: []string{
				"head 200 1.0 cl=-1 body=3 ts=1/1/0",
				"done 200 1.0 cl=-1 body=109 ts=1/1/4",
			},
		},
		{
			name:  "close-delimited with nothing after the head",
			segs:  []seg{s("HTTP/1.1 500 Internal Server Error\r\n\r\n")},
			close: true,
			want: []string{
				"head 500 1.1 cl=-1 body=0 ts=1/1/0",
				"done 500 1.1 cl=-1 body=0 ts=1/1/2",
			},
		},
		{
			name:  "non-chunked transfer coding is delimited by close",
			segs:  []seg{s("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n\x1f\x8b")},
			close: true,
			want: []string{
				"head 200 1.1 cl=-1 body=2 ts=1/1/0",
				"done 200 1.1 cl=-1 body=2 ts=1/1/2",
			},
		},
		{
			name: "101 switches protocols",
			segs: []seg{s("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"), s("\x81\x05hello"), s("\x88\x00")},
			want: []string{"done 101 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "2xx to CONNECT starts a tunnel",
			push: []string{"CONNECT"},
			segs: []seg{s("HTTP/1.1 200 Connection established\r\n\r\n"), s("\x16\x03\x03\x00\x5a\x02\x00")},
			want: []string{"done 200 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "rejected CONNECT keeps parsing",
			push: []string{"CONNECT", "GET"},
			segs: []seg{s("HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n"), s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")},
			want: []string{
				"done 407 1.1 cl=0 body=0 ts=1/1/1 ka",
				"done 200 1.1 cl=0 body=0 ts=2/2/2 ka",
			},
		},
		{
			name:    "malformed status line at stream start",
			segs:    []seg{s("HTTP/1.1 abc OK\r\n\r\n")},
			notHTTP: true,
			errs:    map[Error]uint64{ErrBadStatusLine: 1},
		},
		{
			name: "malformed status line mid-stream is counted and skipped",
			segs: []seg{
				s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
				s("HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n"),
				s("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
			},
			want: []string{
				"done 200 1.1 cl=0 body=0 ts=1/1/1 ka",
				"done 404 1.1 cl=0 body=0 ts=3/3/3 ka",
			},
			errs: map[Error]uint64{ErrBadStatusLine: 1},
		},
		{
			name: "status code with four digits is malformed",
			segs: []seg{s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 2000 OK\r\n\r\n")},
			want: []string{"done 200 1.1 cl=0 body=0 ts=1/1/1 ka"},
			errs: map[Error]uint64{ErrBadStatusLine: 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.mode = ModeResponse
			runCase(t, c)
		})
	}
}

func TestDetectMode(t *testing.T) {
	cases := []struct {
		name string
		data string
		want Mode
	}{
		{"request", "POST /x HTTP/1.1\r\nContent-Length: 0\r\n\r\n", ModeRequest},
		{"response", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", ModeResponse},
		{"HEAD request shares a first byte with responses", "HEAD / HTTP/1.1\r\n\r\n", ModeRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewParser(ModeDetect)
			// Feed one byte at a time so the decision waits for enough bytes.
			var ev []Message
			for i := range len(c.data) {
				ev = append(ev, p.Feed([]byte(c.data[i:i+1]), 1, uint64(i+1))...)
			}
			if p.Mode() != c.want || p.NotHTTP() {
				t.Fatalf("mode %v notHTTP %v, want %v", p.Mode(), p.NotHTTP(), c.want)
			}
			if len(ev) != 1 || !ev[0].Complete || ev[0].IsRequest != (c.want == ModeRequest) {
				t.Fatalf("events %+v", ev)
			}
		})
	}
}

func TestMethodQueue(t *testing.T) {
	p := NewParser(ModeResponse)
	for range MethodQueueLen {
		p.PushRequestMethod("GET")
	}
	if n := p.Errors()[ErrMethodQueueFull]; n != 0 {
		t.Fatalf("queue full after %d pushes", MethodQueueLen)
	}
	// The oldest GET is dropped, so HEAD is answered by the 64th response.
	p.PushRequestMethod("HEAD")
	if n := p.Errors()[ErrMethodQueueFull]; n != 1 {
		t.Fatalf("ErrMethodQueueFull = %d, want 1", n)
	}
	if p.LastError() != ErrMethodQueueFull {
		t.Fatalf("LastError = %v", p.LastError())
	}
	resp := []byte("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	for i := range MethodQueueLen - 1 {
		if ev := p.Feed(resp, len(resp), uint64(i+1)); len(ev) != 1 || ev[0].BodyBytes != 2 {
			t.Fatalf("response %d: %+v", i, ev)
		}
	}
	// HEAD: the "ok" is then the start of the next message and is garbage.
	ev := p.Feed(resp, len(resp), 100)
	if len(ev) != 1 || ev[0].BodyBytes != 0 || !ev[0].Complete {
		t.Fatalf("HEAD response: %+v", ev)
	}
	if p.Errors()[ErrBadStatusLine] != 1 {
		t.Fatalf("trailing bytes after HEAD response not counted")
	}
}

func TestErrorsAPI(t *testing.T) {
	p := NewParser(ModeResponse)
	if p.LastError() != nil {
		t.Fatal("fresh parser has an error")
	}
	in := []byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nnonsense\r\n")
	p.Feed(in, len(in), 1)
	if p.LastError() != ErrBadStatusLine || p.LastError().Error() != "httpparse: malformed status line" {
		t.Fatalf("LastError = %v", p.LastError())
	}
	c := p.Errors()
	var agg ErrorCounts
	agg.Add(&c)
	agg.Add(&c)
	if agg.Total() != 2 || agg.Map()["bad_status_line"] != 2 || len(agg.Map()) != 1 {
		t.Fatalf("aggregate = %v", agg.Map())
	}
	if ErrHeaderTooLarge.Error() != "httpparse: header block too large" || Error(0).String() != "unknown" || Error(200).Error() != "httpparse: unknown error" {
		t.Fatal("error strings")
	}
}
