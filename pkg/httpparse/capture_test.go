package httpparse

import (
	"strings"
	"testing"
)

// Segments whose capture was cut at N bytes.
func TestCaptureCut(t *testing.T) {
	bigCookie := strings.Repeat("a", 300)
	cl1000 := "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
	cl5000 := "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n"
	cutPost := "POST /upload HTTP/1.1\r\nContent-Length: 10\r\nCookie: " + bigCookie + "\r\n\r\n"
	cutPostBig := "POST /upload HTTP/1.1\r\nContent-Length: 1000\r\nCookie: " + bigCookie + "\r\n\r\n"
	cutExpect := "POST /upload HTTP/1.1\r\nContent-Length: 10\r\nExpect: 100-continue\r\nCookie: " + bigCookie + "\r\n\r\n"
	cutGet := "GET /page HTTP/1.1\r\nHost: a\r\nCookie: " + bigCookie + "\r\n\r\n"
	cutChunked := chunkedResp[:len(chunkedResp)-2] + "Set-Cookie: " + bigCookie + "\r\n\r\n5\r\nhello\r\n"
	cutPlain := "HTTP/1.1 200 OK\r\nServer: x\r\nContent-Security-Policy: " + bigCookie + "\r\nContent-Length: 3\r\n\r\nabc"
	chunk16 := "10\r\n" + strings.Repeat("x", 16) + "\r\n"

	cases := []parserCase{
		{
			name: "head complete, body cut",
			mode: ModeResponse,
			segs: []seg{cut(cl1000+strings.Repeat("x", 1000), 64), s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")},
			want: []string{
				"done 200 1.1 cl=1000 body=1000 ts=1/1/1 ka",
				"done 200 1.1 cl=0 body=0 ts=2/2/2 ka",
			},
		},
		{
			name: "body cut in several segments",
			mode: ModeResponse,
			segs: []seg{cut(cl5000+strings.Repeat("x", 2000), 256), cut(strings.Repeat("y", 3000), 256)},
			want: []string{
				"head 200 1.1 cl=5000 body=2000 ts=1/1/0 ka",
				"done 200 1.1 cl=5000 body=5000 ts=1/1/2 ka",
			},
		},
		{
			name: "body counted from total only",
			mode: ModeResponse,
			segs: []seg{s(cl1000), gap("", 600), gap("", 400)},
			want: []string{
				"head 200 1.1 cl=1000 body=0 ts=1/1/0 ka",
				"done 200 1.1 cl=1000 body=1000 ts=1/1/3 ka",
			},
		},
		{
			name: "head cut, Content-Length honoured via total",
			mode: ModeRequest,
			segs: []seg{cut(cutPost+"0123456789", 100), s("GET /next HTTP/1.1\r\n\r\n")},
			want: []string{
				"done POST /upload 1.1 cl=10 body=10 ts=1/1/1 ka trunc",
				"done GET /next 1.1 cl=-1 body=0 ts=2/2/2 ka",
			},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name: "head cut, Content-Length body in later segments",
			mode: ModeRequest,
			// Uncaptured bytes count towards the body (a lower bound of
			// the message end), so completion may come early, never late.
			segs: []seg{cut(cutPostBig, 100), s(strings.Repeat("b", 1000))},
			want: []string{
				"head POST /upload 1.1 cl=1000 body=" + itoa(len(cutPostBig)-100) + " ts=1/1/0 ka trunc",
				"done POST /upload 1.1 cl=1000 body=1000 ts=1/1/2 ka trunc",
			},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name: "head cut with Expect: 100-continue, body after the interim response",
			mode: ModeRequest,
			segs: []seg{cut(cutExpect, 80), s("0123456789")},
			want: []string{
				"head POST /upload 1.1 cl=10 body=0 ts=1/1/0 ka expect trunc",
				"done POST /upload 1.1 cl=10 body=10 ts=1/1/2 ka expect trunc",
			},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name: "head cut, request without framing headers has no body",
			mode: ModeRequest,
			segs: []seg{cut(cutGet, 40), s("rest of a head that was written separately\r\n\r\n"), s("GET /two HTTP/1.1\r\n\r\n")},
			want: []string{
				"done GET /page 1.1 cl=-1 body=0 ts=1/1/1 ka trunc",
				"done GET /two 1.1 cl=-1 body=0 ts=3/3/3 ka",
			},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name: "head cut inside the request line",
			mode: ModeRequest,
			segs: []seg{cut("GET /a/very/long/path?with=query HTTP/1.1\r\n\r\n", 12)},
			want: []string{"done GET /a/very/ 1.1 cl=-1 body=0 ts=1/1/1 ka trunc"},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name: "head cut, chunked response ends on a captured last-chunk",
			mode: ModeResponse,
			segs: []seg{cut(cutChunked, 80), s("6\r\n world\r\n"), s("0\r\n\r\n"), s("HTTP/1.1 204 No Content\r\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=0 ts=1/1/0 ka chunked trunc",
				"done 200 1.1 cl=-1 body=16 ts=1/1/3 ka chunked trunc",
				"done 204 1.1 cl=-1 body=0 ts=4/4/4 ka",
			},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name: "head cut, unknown framing ends at the next response",
			mode: ModeResponse,
			segs: []seg{cut(cutPlain, 60), s("more body"), s("HTTP/1.1 204 No Content\r\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=0 ts=1/1/0 ka trunc",
				"done 200 1.1 cl=-1 body=9 ts=1/1/2 ka trunc",
				"done 204 1.1 cl=-1 body=0 ts=3/3/3 ka",
			},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name:  "head cut, unknown framing ends on close",
			mode:  ModeResponse,
			segs:  []seg{cut(cutPlain, 60), s("more body")},
			close: true,
			want: []string{
				"head 200 1.1 cl=-1 body=0 ts=1/1/0 ka trunc",
				"done 200 1.1 cl=-1 body=9 ts=1/1/2 ka trunc",
			},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name: "head cut, HEAD response still has no body",
			mode: ModeResponse,
			push: []string{"HEAD"},
			segs: []seg{cut(cutPlain, 60)},
			want: []string{"done 200 1.1 cl=-1 body=0 ts=1/1/1 ka trunc"},
			errs: map[Error]uint64{ErrHeadTruncated: 1},
		},
		{
			name: "chunk data cut, framing kept",
			mode: ModeResponse,
			segs: []seg{cut(chunkedResp+"1000\r\n"+strings.Repeat("x", 4096)+"\r\n", 200), s("0\r\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=4096 ts=1/1/0 ka chunked",
				"done 200 1.1 cl=-1 body=4096 ts=1/1/2 ka chunked",
			},
		},
		{
			name: "chunk data and its CR uncaptured",
			mode: ModeResponse,
			segs: []seg{cut(chunkedResp+"4\r\nabcd\r", 52), s("\n0\r\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=4 ts=1/1/0 ka chunked",
				"done 200 1.1 cl=-1 body=4 ts=1/1/2 ka chunked",
			},
		},
		{
			name: "chunk-size line not captured",
			mode: ModeResponse,
			segs: []seg{cut(chunkedResp+chunk16+chunk16, 70), s("0\r\n\r\n"), s("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=37 ts=1/1/0 ka chunked",
				"done 200 1.1 cl=-1 body=42 ts=1/1/2 ka chunked",
				"done 200 1.1 cl=0 body=0 ts=3/3/3 ka",
			},
			errs: map[Error]uint64{ErrCaptureGap: 1},
		},
		{
			name: "next message starts in uncaptured bytes",
			mode: ModeRequest,
			segs: []seg{cut("GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n", 19), s("GET /c HTTP/1.1\r\n\r\n")},
			want: []string{
				"done GET /a 1.1 cl=-1 body=0 ts=1/1/1 ka",
				"done GET /c 1.1 cl=-1 body=0 ts=2/2/2 ka",
			},
			errs: map[Error]uint64{ErrCaptureGap: 1},
		},
		{
			name: "lost responses: resync assumes the newest request",
			mode: ModeResponse,
			push: []string{"GET", "GET", "HEAD"},
			segs: []seg{
				cut("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 38),
				s("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"),
			},
			want: []string{
				"done 200 1.1 cl=0 body=0 ts=1/1/1 ka",
				"done 200 1.1 cl=5 body=0 ts=2/2/2 ka",
			},
			errs: map[Error]uint64{ErrCaptureGap: 1},
		},
		{
			name: "nothing captured at all",
			mode: ModeRequest,
			segs: []seg{gap("", 100), s("body bytes"), s("GET / HTTP/1.1\r\n\r\n")},
			want: []string{"done GET / 1.1 cl=-1 body=0 ts=3/3/3 ka"},
			errs: map[Error]uint64{ErrCaptureGap: 1},
		},
		{
			name: "close-delimited body with uncaptured bytes",
			mode: ModeResponse,
			segs: []seg{cut("HTTP/1.0 200 OK\r\n\r\n"+strings.Repeat("z", 500), 30)},
			want: []string{"head 200 1.0 cl=-1 body=500 ts=1/1/0"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runCase(t, c) })
	}
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

func TestHeaderTooLarge(t *testing.T) {
	big := "GET /big HTTP/1.1\r\nHost: a\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n"
	bigPost := "POST /big HTTP/1.1\r\nContent-Length: 5\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\nhello"
	oneLine := "GET /" + strings.Repeat("p", 64<<10) + " HTTP/1.1\r\n\r\n"
	next := "GET /next HTTP/1.1\r\n\r\n"
	in1K := func(data string) []seg {
		var out []seg
		for len(data) > 0 {
			n := min(1024, len(data))
			out = append(out, s(data[:n]))
			data = data[n:]
		}
		return out
	}
	aborted := "aborted GET /big 1.1 cl=-1 body=0 ts=1/1/0 ka trunc err=header_too_large"
	cases := []parserCase{
		{
			name: "one segment, then the next request",
			segs: []seg{s(big + next)},
			want: []string{aborted, "done GET /next 1.1 cl=-1 body=0 ts=1/1/1 ka"},
		},
		{
			name: "1 KiB segments, then the next request",
			segs: append(in1K(big), s(next)),
			want: []string{
				"aborted GET /big 1.1 cl=-1 body=0 ts=1/16/0 ka trunc err=header_too_large",
				"done GET /next 1.1 cl=-1 body=0 ts=66/66/66 ka",
			},
		},
		{
			name: "body skipped with the Content-Length seen",
			segs: []seg{s(bigPost + next)},
			want: []string{
				"aborted POST /big 1.1 cl=5 body=0 ts=1/1/0 ka trunc err=header_too_large",
				"done GET /next 1.1 cl=-1 body=0 ts=1/1/1 ka",
			},
		},
		{
			name: "oversized request line",
			segs: []seg{s(oneLine), s(next)},
			want: []string{
				"aborted GET /" + strings.Repeat("p", MaxHeadBytes-5) + " 1.1 cl=-1 body=0 ts=1/1/0 ka trunc err=header_too_large",
				"done GET /next 1.1 cl=-1 body=0 ts=2/2/2 ka",
			},
		},
		{
			name: "end of the oversized head not captured",
			segs: []seg{cut(big, MaxHeadBytes+100), s("aaaa\r\n\r\n"), s(next)},
			want: []string{aborted, "done GET /next 1.1 cl=-1 body=0 ts=3/3/3 ka"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.mode = ModeRequest
			c.errs = map[Error]uint64{ErrHeaderTooLarge: 1}
			runCase(t, c)
		})
	}
	t.Run("fresh parser afterwards", func(t *testing.T) {
		runCase(t, parserCase{mode: ModeRequest, segs: []seg{s(next)}, want: []string{"done GET /next 1.1 cl=-1 body=0 ts=1/1/1 ka"}})
	})
	t.Run("buffer stays bounded", func(t *testing.T) {
		p := NewParser(ModeRequest)
		for i, sg := range in1K(big) {
			p.Feed([]byte(sg.data), len(sg.data), uint64(i+1))
			if len(p.head) > MaxHeadBytes || cap(p.head) > 2*MaxHeadBytes {
				t.Fatalf("head buffer len %d cap %d", len(p.head), cap(p.head))
			}
		}
	})
}
