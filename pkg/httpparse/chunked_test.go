package httpparse

import "testing"

const chunkedResp = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"

func TestChunked(t *testing.T) {
	cases := []parserCase{
		{
			name: "whole body in one segment",
			segs: []seg{s(chunkedResp + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")},
			want: []string{"done 200 1.1 cl=-1 body=11 ts=1/1/1 ka chunked"},
		},
		{
			name: "chunk size split across segments",
			segs: []seg{s(chunkedResp + "1"), s("0\r\n0123456789abcdef\r\n"), s("0\r\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=0 ts=1/1/0 ka chunked",
				"done 200 1.1 cl=-1 body=16 ts=1/1/3 ka chunked",
			},
		},
		{
			name: "chunk-size CRLF split",
			segs: []seg{s(chunkedResp + "3\r"), s("\nabc\r"), s("\n0\r"), s("\n\r"), s("\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=0 ts=1/1/0 ka chunked",
				"done 200 1.1 cl=-1 body=3 ts=1/1/5 ka chunked",
			},
		},
		{
			name: "upper-case hex and chunk extensions",
			segs: []seg{s(chunkedResp + "A;name=value;q=\"x\"\r\n0123456789\r\n0 ; last\r\n\r\n")},
			want: []string{"done 200 1.1 cl=-1 body=10 ts=1/1/1 ka chunked"},
		},
		{
			name: "trailers split across segments",
			segs: []seg{s(chunkedResp + "2\r\nhi\r\n0\r\nX-Trailer: a\r\n"), s("Other: b\r"), s("\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=2 ts=1/1/0 ka chunked",
				"done 200 1.1 cl=-1 body=2 ts=1/1/3 ka chunked",
			},
		},
		{
			name: "last-chunk in its own segment",
			segs: []seg{s(chunkedResp), s("5\r\nhello\r\n"), s("0\r\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=0 ts=1/1/0 ka chunked",
				"done 200 1.1 cl=-1 body=5 ts=1/1/3 ka chunked",
			},
		},
		{
			name: "bare LF chunk framing",
			segs: []seg{s(chunkedResp + "2\nhi\n0\n\n")},
			want: []string{"done 200 1.1 cl=-1 body=2 ts=1/1/1 ka chunked"},
		},
		{
			name: "pipelined message after a chunked body",
			segs: []seg{s(chunkedResp + "0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx")},
			want: []string{
				"done 200 1.1 cl=-1 body=0 ts=1/1/1 ka chunked",
				"done 200 1.1 cl=1 body=1 ts=1/1/1 ka",
			},
		},
		{
			name: "invalid chunk size",
			segs: []seg{s(chunkedResp + "zz\r\n")},
			want: []string{
				"aborted 200 1.1 cl=-1 body=0 ts=1/1/0 ka chunked err=bad_chunk",
			},
			errs: map[Error]uint64{ErrBadChunk: 1},
		},
		{
			name: "chunk size overflow",
			segs: []seg{s(chunkedResp + "1234567890abcdef0\r\n")},
			want: []string{"aborted 200 1.1 cl=-1 body=0 ts=1/1/0 ka chunked err=bad_chunk"},
			errs: map[Error]uint64{ErrBadChunk: 1},
		},
		{
			name: "missing CRLF after chunk data",
			segs: []seg{s(chunkedResp + "2\r\nhiXX\r\n0\r\n\r\n")},
			want: []string{"aborted 200 1.1 cl=-1 body=2 ts=1/1/0 ka chunked err=bad_chunk"},
			errs: map[Error]uint64{ErrBadChunk: 1},
		},
		{
			name: "aborted in a later segment after the head was reported",
			segs: []seg{s(chunkedResp + "2\r\nhi"), s("\r\n!\r\n"), s("HTTP/1.1 204 No Content\r\n\r\n")},
			want: []string{
				"head 200 1.1 cl=-1 body=2 ts=1/1/0 ka chunked",
				"aborted 200 1.1 cl=-1 body=2 ts=1/1/0 ka chunked err=bad_chunk",
				"done 204 1.1 cl=-1 body=0 ts=3/3/3 ka",
			},
			errs: map[Error]uint64{ErrBadChunk: 1},
		},
		{
			name: "oversized chunk extension",
			segs: []seg{s(chunkedResp + "1;" + string(make([]byte, maxChunkLine+1)))},
			want: []string{"aborted 200 1.1 cl=-1 body=0 ts=1/1/0 ka chunked err=bad_chunk"},
			errs: map[Error]uint64{ErrBadChunk: 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.mode = ModeResponse
			runCase(t, c)
		})
	}
}

func TestChunkedRequest(t *testing.T) {
	runCase(t, parserCase{
		mode: ModeRequest,
		segs: []seg{
			s("POST /up HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nwi"),
			s("ki\r\n5\r\npedia\r\n0\r\n\r\nGET /next HTTP/1.1\r\n\r\n"),
		},
		want: []string{
			"head POST /up 1.1 cl=-1 body=2 ts=1/1/0 ka chunked",
			"done POST /up 1.1 cl=-1 body=9 ts=1/1/2 ka chunked",
			"done GET /next 1.1 cl=-1 body=0 ts=2/2/2 ka",
		},
	})
}
