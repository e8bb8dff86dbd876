package correlate

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/httpparse/h2"
	"github.com/weftdev/weft/pkg/spans"
)

// h2copy builds what the kernel copies of an HTTP/2 direction: frame
// headers, header blocks, and DATA frames without their payloads.
type h2copy struct {
	enc *hpack.Encoder
	hb  bytes.Buffer
	b   []byte
}

func newH2Copy(preface bool) *h2copy {
	w := &h2copy{}
	w.enc = hpack.NewEncoder(&w.hb)
	if preface {
		w.b = append(w.b, h2.ClientPreface...)
	}
	return w
}

func (w *h2copy) frame(typ, flags byte, stream uint32, length int, payload []byte) *h2copy {
	w.b = append(w.b, byte(length>>16), byte(length>>8), byte(length), typ, flags)
	w.b = binary.BigEndian.AppendUint32(w.b, stream)
	w.b = append(w.b, payload...)
	return w
}

func (w *h2copy) headers(stream uint32, end bool, kv ...string) *h2copy {
	w.hb.Reset()
	for i := 0; i < len(kv); i += 2 {
		w.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	flags := byte(0x4) // END_HEADERS
	if end {
		flags |= 0x1
	}
	return w.frame(1, flags, stream, w.hb.Len(), w.hb.Bytes())
}

// data is a DATA frame of n payload bytes, as copied: its header alone.
func (w *h2copy) data(stream uint32, end bool, n int) *h2copy {
	flags := byte(0)
	if end {
		flags = 0x1
	}
	return w.frame(0, flags, stream, n, nil)
}

func (w *h2copy) take() string {
	s := string(w.b)
	w.b = w.b[:0]
	return s
}

// h2data feeds one HTTP/2 copy.
func (r *rec) h2data(conn uint64, dir event.Direction, ts uint64, payload string, capture event.Capture) {
	local, remote := srvAddr, cliAddr
	if conn >= 100 {
		local, remote = cliAddr, upAddr
	}
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: conn, PID: 10, TID: 11, Key: 11, Dir: dir, Time: ts,
		Bytes: uint32(len(payload)) + 1000, Payload: []byte(payload), Local: local, Remote: remote, Capture: capture})
}

const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

// A server's interleaved streams: one span each, in the order they end,
// each with its own path, status, sizes and times; a traceparent joins
// its trace. The server's SETTINGS, copied before the preface was seen,
// is no request.
func TestH2ServerStreams(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Egress, 1*ms, string(newH2Copy(false).frame(4, 0, 0, 0, nil).take()))
	req := newH2Copy(true).frame(4, 0, 0, 0, nil).
		headers(1, true, ":method", "GET", ":scheme", "http", ":authority", "svc:8080", ":path", "/a/1?q=1", "user-agent", "go").
		headers(3, false, ":method", "POST", ":scheme", "http", ":authority", "svc:8080", ":path", "/b/2", "traceparent", tp).
		data(3, true, 300)
	// Read as Go's server does: the preface in two pieces.
	all := req.take()
	r.h2data(1, event.Ingress, 2*ms, all[:14], event.CaptureH2)
	r.h2data(1, event.Ingress, 2*ms, all[14:], event.CaptureH2)
	resp := newH2Copy(false)
	resp.headers(3, false, ":status", "201").data(3, true, 20)
	r.h2data(1, event.Egress, 5*ms, resp.take(), event.CaptureH2)
	resp.headers(1, false, ":status", "404").data(1, false, 7).data(1, true, 0)
	r.h2data(1, event.Egress, 9*ms, resp.take(), event.CaptureH2)
	if len(r.spans) != 2 {
		t.Fatalf("%d spans, want 2", len(r.spans))
	}
	b, a := r.spans[0], r.spans[1]
	if a.Kind != spans.KindServer || a.Name != "GET /a/{id}" || a.Path != "/a/1" || a.StatusCode != 404 || a.Proto != "2" ||
		a.Host != "svc:8080" || a.UserAgent != "go" || a.ResponseBodySize != 7 || a.RequestBodySize != 0 ||
		a.Duration() != 7*time.Millisecond || a.ParentID.IsValid() || !a.TraceID.IsValid() {
		t.Errorf("stream 1: %+v (duration %v)", a, a.Duration())
	}
	if b.Name != "POST /b/{id}" || b.StatusCode != 201 || b.RequestBodySize != 300 || b.ResponseBodySize != 20 ||
		b.TraceID.String() != tp[3:35] || b.ParentID.String() != tp[36:52] || !b.ParentRemote || b.Duration() != 3*time.Millisecond {
		t.Errorf("stream 3: %+v (duration %v)", b, b.Duration())
	}
	if got := r.c.Stats().H2Conns.Load(); got != 1 {
		t.Errorf("h2 conns %d", got)
	}
}

// A client's gRPC calls: OK in trailers, an error as trailers-only, and
// the kernel losing the framing ends the connection's following, with
// the open stream counted and the kernel told to stop copying.
func TestH2ClientGRPC(t *testing.T) {
	var stopped []uint64
	r := newRec(t, Options{NotHTTP: func(id uint64, _, _ uint16) { stopped = append(stopped, id) }})
	req := newH2Copy(true)
	for _, s := range []uint32{1, 3, 5} {
		req.headers(s, false, ":method", "POST", ":scheme", "http", ":authority", "up:9090", ":path", "/pkg.Svc/Get",
			"content-type", "application/grpc").data(s, true, 12)
	}
	r.h2data(100, event.Egress, 1*ms, req.take(), event.CaptureH2)
	resp := newH2Copy(false)
	resp.headers(1, false, ":status", "200", "content-type", "application/grpc").data(1, false, 30).
		headers(1, true, "grpc-status", "0").
		headers(3, true, ":status", "200", "content-type", "application/grpc", "grpc-status", "5", "grpc-message", "no such key")
	r.h2data(100, event.Ingress, 4*ms, resp.take(), event.CaptureH2)
	r.h2data(100, event.Ingress, 6*ms, "", event.CaptureH2Cut)
	if len(r.spans) != 2 {
		t.Fatalf("%d spans, want 2", len(r.spans))
	}
	ok, nf := r.spans[0], r.spans[1]
	if ok.Kind != spans.KindClient || ok.Name != "pkg.Svc/Get" || ok.RPCSystem != "grpc" || ok.RPCService != "pkg.Svc" ||
		ok.RPCMethod != "Get" || ok.RPCStatus != 0 || ok.IsError() || ok.ParentID.IsValid() || ok.ResponseBodySize != 30 {
		t.Errorf("OK call: %+v", ok)
	}
	if nf.RPCStatus != 5 || nf.RPCMessage != "no such key" || !nf.IsError() {
		t.Errorf("NOT_FOUND call: %+v", nf)
	}
	st := r.c.Stats()
	if st.H2Lost.Load() != 1 || st.H2StreamsLost.Load() != 1 || len(stopped) != 1 || st.ClientRoots.Load() != 2 {
		t.Errorf("lost %d, streams lost %d, stopped %v, roots %d", st.H2Lost.Load(), st.H2StreamsLost.Load(), stopped, st.ClientRoots.Load())
	}
	r.h2data(100, event.Ingress, 7*ms, string(newH2Copy(false).headers(5, true, ":status", "200").take()), event.CaptureH2)
	if len(r.spans) != 2 {
		t.Errorf("a lost connection made %d spans", len(r.spans))
	}
}

// The server's first frames can reach user space ahead of the preface
// (its write ended first): the direction is still told right.
func TestH2ServerSideFirst(t *testing.T) {
	r := newRec(t, Options{})
	r.h2data(1, event.Egress, 1*ms, string(newH2Copy(false).frame(4, 0, 0, 0, nil).take()), event.CaptureH2)
	r.h2data(1, event.Ingress, 2*ms, newH2Copy(true).headers(1, true, ":method", "GET", ":scheme", "http", ":path", "/x").take(), event.CaptureH2)
	r.h2data(1, event.Egress, 3*ms, newH2Copy(false).headers(1, true, ":status", "204").take(), event.CaptureH2)
	if len(r.spans) != 1 || r.spans[0].Kind != spans.KindServer || r.spans[0].StatusCode != 204 || r.spans[0].Path != "/x" {
		t.Fatalf("spans %+v", r.spans)
	}
}

const (
	upgradeReq = "GET /up HTTP/1.1\r\nHost: svc\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n"
	switched   = "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n"
)

// An HTTP/1.1 request upgraded to HTTP/2 (Upgrade: h2c) keeps the span
// the kernel gave it and ends with stream 1's answer; later streams are
// spans of their own.
func TestH2Upgrade(t *testing.T) {
	r := newRec(t, Options{})
	kernelSpan := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Dir: event.Ingress, Time: 1 * ms,
		Bytes: uint32(len(upgradeReq)), Payload: []byte(upgradeReq), Local: srvAddr, Remote: cliAddr,
		Ctx: event.CtxServer, TraceID: [16]byte{9}, SpanID: kernelSpan, TraceFlags: 1})
	r.data(1, 10, 11, event.Egress, 2*ms, switched)
	r.data(1, 10, 11, event.Egress, 2*ms, string(newH2Copy(false).frame(4, 0, 0, 0, nil).take())) // SETTINGS, before the preface
	r.h2data(1, event.Ingress, 3*ms, newH2Copy(true).frame(4, 0, 0, 0, nil).take(), event.CaptureH2)
	resp := newH2Copy(false)
	r.h2data(1, event.Egress, 8*ms, resp.headers(1, false, ":status", "200").data(1, true, 5).take(), event.CaptureH2)
	req := newH2Copy(false)
	r.h2data(1, event.Ingress, 9*ms, req.headers(3, true, ":method", "GET", ":scheme", "http", ":path", "/next").take(), event.CaptureH2)
	r.h2data(1, event.Egress, 10*ms, resp.headers(3, true, ":status", "204").take(), event.CaptureH2)
	if len(r.spans) != 2 {
		t.Fatalf("%d spans, want 2: %+v", len(r.spans), r.spans)
	}
	up, next := r.spans[0], r.spans[1]
	if up.SpanID != kernelSpan || up.Path != "/up" || up.StatusCode != 200 || up.ResponseBodySize != 5 ||
		up.Duration() != 7*time.Millisecond || up.ErrorType != "" {
		t.Errorf("upgrade request: %+v (duration %v)", up, up.Duration())
	}
	if next.Path != "/next" || next.StatusCode != 204 || next.Proto != "2" || next.SpanID == kernelSpan {
		t.Errorf("stream 3: %+v", next)
	}
}

// A 101 to Upgrade: h2c after which the client goes on without the
// preface was the answer: the span ends there.
func TestH2UpgradeNotTaken(t *testing.T) {
	r := newRec(t, Options{})
	r.data(100, 10, 11, event.Egress, 1*ms, upgradeReq)
	r.data(100, 10, 11, event.Ingress, 2*ms, switched)
	if len(r.spans) != 0 {
		t.Fatalf("the upgrade ended before its connection went on: %+v", r.spans)
	}
	r.data(100, 10, 11, event.Egress, 5*ms, "something else")
	if len(r.spans) != 1 || r.spans[0].StatusCode != 101 || r.spans[0].Duration() != time.Millisecond {
		t.Fatalf("spans %+v", r.spans)
	}
}

// An idle HTTP/2 connection is kept: a stream after a quiet spell is
// still decoded with the tables the earlier streams built.
func TestH2IdleKept(t *testing.T) {
	r := newRec(t, Options{IdleTimeout: time.Second})
	req, resp := newH2Copy(true), newH2Copy(false)
	get := func(stream uint32, ts uint64) {
		r.h2data(100, event.Egress, ts, req.headers(stream, true, ":method", "GET", ":scheme", "http", ":authority", "up", ":path", "/same").take(), event.CaptureH2)
		r.h2data(100, event.Ingress, ts+ms, resp.headers(stream, true, ":status", "200").take(), event.CaptureH2)
	}
	get(1, 1*ms)
	r.c.Expire(10 * uint64(time.Second))
	get(3, 11*uint64(time.Second)) // its headers refer to the dynamic table
	if len(r.spans) != 2 || r.spans[1].Path != "/same" || r.spans[1].StatusCode != 200 {
		t.Fatalf("spans %+v", r.spans)
	}
}

// h2claimed feeds a client write that carries the parent of stream (the
// kernel's CtxH2Stream).
func (r *rec) h2claimed(conn uint64, ts uint64, payload string, stream uint32, trace [16]byte, parent [8]byte) {
	r.h2claimedSpan(conn, ts, payload, stream, trace, parent, [8]byte{})
}

// h2claimedSpan is h2claimed with the span id the kernel decided for the
// stream (for a server end on this host), if not zero.
func (r *rec) h2claimedSpan(conn uint64, ts uint64, payload string, stream uint32, trace [16]byte, parent, span [8]byte) {
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: conn, PID: 10, TID: 11, Key: 11, Dir: event.Egress, Time: ts,
		Bytes: uint32(len(payload)), Payload: []byte(payload), Local: cliAddr, Remote: upAddr, Capture: event.CaptureH2,
		Ctx: event.CtxH2Stream, TraceID: trace, ParentID: parent, SpanID: span, TraceFlags: 1, H2Stream: stream})
}

// Client streams take the parent their opening write carried, and only
// that write's: a claim on a write that opened another stream, or none,
// parents nothing (counted); an application's traceparent still wins. A
// span id the kernel decided (/one's) is the span's.
func TestH2ClientStreamParents(t *testing.T) {
	r := newRec(t, Options{})
	req := newH2Copy(true)
	r.h2data(100, event.Egress, 1*ms, req.frame(4, 0, 0, 0, nil).take(), event.CaptureH2)
	get := func(stream uint32, path string, kv ...string) string {
		return req.headers(stream, true, append([]string{":method", "GET", ":scheme", "http", ":authority", "up:9090", ":path", path}, kv...)...).take()
	}
	t1, p1 := [16]byte{1, 1}, [8]byte{1}
	t3, p3 := [16]byte{3, 3}, [8]byte{3}
	t5, p5 := [16]byte{5, 5}, [8]byte{5}
	t7, p7 := [16]byte{7, 7}, [8]byte{7}
	s1 := [8]byte{0x51}
	r.h2claimedSpan(100, 2*ms, get(1, "/one"), 1, t1, p1, s1)
	r.h2claimed(100, 3*ms, get(3, "/three"), 3, t3, p3)
	r.h2claimed(100, 4*ms, get(5, "/five"), 9, t5, p5)                // names a stream it did not open
	r.h2claimed(100, 5*ms, string(req.data(3, true, 0).b), 7, t7, p7) // opens none
	req.b = req.b[:0]
	r.h2data(100, event.Egress, 6*ms, get(7, "/seven"), event.CaptureH2)
	r.h2claimed(100, 7*ms, get(9, "/nine", "traceparent", tp), 9, t1, p1)
	resp := newH2Copy(false)
	for _, s := range []uint32{3, 1, 5, 7, 9} {
		resp.headers(s, true, ":status", "200")
	}
	r.h2data(100, event.Ingress, 8*ms, resp.take(), event.CaptureH2)
	if len(r.spans) != 5 {
		t.Fatalf("%d spans, want 5", len(r.spans))
	}
	byPath := map[string]spans.Span{}
	for _, s := range r.spans {
		byPath[s.Path] = s
	}
	for path, want := range map[string]struct {
		trace [16]byte
		span  [8]byte
	}{"/one": {t1, p1}, "/three": {t3, p3}} {
		s := byPath[path]
		if s.TraceID != want.trace || s.ParentID != want.span || s.TraceFlags != 1 {
			t.Errorf("%s: trace %s parent %s, want its claim's", path, s.TraceID, s.ParentID)
		}
	}
	if s := byPath["/one"]; s.SpanID != s1 {
		t.Errorf("/one: span %s, want the kernel's %x", s.SpanID, s1)
	}
	if s := byPath["/three"]; !s.SpanID.IsValid() || s.SpanID == s1 {
		t.Errorf("/three: span %s, want one of its own", s.SpanID)
	}
	for _, path := range []string{"/five", "/seven"} {
		if s := byPath[path]; s.ParentID.IsValid() || s.TraceID == t5 || s.TraceID == t7 {
			t.Errorf("%s: trace %s parent %s, want a trace of its own", path, s.TraceID, s.ParentID)
		}
	}
	if s := byPath["/nine"]; s.TraceID.String() != tp[3:35] || s.ParentID.String() != tp[36:52] {
		t.Errorf("/nine: trace %s parent %s, want the traceparent's", s.TraceID, s.ParentID)
	}
	if got := r.c.Stats().H2ClaimsUnmatched.Load(); got != 2 {
		t.Errorf("unmatched claims %d, want 2", got)
	}
}

// A goroutine that writes other requests' streams (grpc-go's loopy
// writer) leaves a claim per stream ahead of its write: one write that
// opens several streams gives each its own claim's parent, a stream of
// another goroutine or process takes none, and a claim whose write never
// came is counted once it expires.
func TestH2ClaimsOfAWriterGoroutine(t *testing.T) {
	r := newRec(t, Options{})
	var span [8]byte // the kernel's span id for the stream, if not zero
	claim := func(pid uint32, goroutine uint64, stream uint32, ts uint64, trace [16]byte, parent [8]byte) {
		r.c.Handle(&event.Event{Kind: event.KindH2Claim, PID: pid, TID: 11, Time: ts, Goroutine: goroutine,
			H2Stream: stream, TraceID: trace, ParentID: parent, SpanID: span, TraceFlags: 1})
	}
	write := func(goroutine uint64, ts uint64, payload string) {
		r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 100, PID: 10, TID: 12, Key: 12, Dir: event.Egress, Time: ts,
			Bytes: uint32(len(payload)), Payload: []byte(payload), Local: cliAddr, Remote: upAddr, Capture: event.CaptureH2,
			Goroutine: goroutine})
	}
	req := newH2Copy(true)
	write(7, 1*ms, req.frame(4, 0, 0, 0, nil).take())
	get := func(stream uint32, path string) *h2copy {
		return req.headers(stream, true, ":method", "POST", ":scheme", "http", ":authority", "up:9090", ":path", path)
	}
	t1, p1 := [16]byte{1, 1}, [8]byte{1}
	t3, p3 := [16]byte{3, 3}, [8]byte{3}
	t5, p5 := [16]byte{5, 5}, [8]byte{5}
	s3 := [8]byte{0x53}
	span = s3
	claim(10, 7, 3, 2*ms, t3, p3)
	span = [8]byte{}
	claim(10, 7, 1, 2*ms, t1, p1)
	claim(11, 7, 5, 2*ms, t5, p5) // another process's goroutine 7
	claim(10, 8, 5, 2*ms, t5, p5) // another goroutine
	claim(10, 7, 9, 2*ms, t5, p5) // a stream never written
	get(1, "/s.S/One")
	write(7, 3*ms, get(3, "/s.S/Three").take())
	write(7, 4*ms, get(5, "/s.S/Five").take())
	resp := newH2Copy(false)
	for _, s := range []uint32{3, 1, 5} {
		resp.headers(s, true, ":status", "200", "grpc-status", "0")
	}
	r.h2data(100, event.Ingress, 5*ms, resp.take(), event.CaptureH2)
	if len(r.spans) != 3 {
		t.Fatalf("%d spans, want 3", len(r.spans))
	}
	for _, s := range r.spans {
		want, ok := map[string]struct {
			trace [16]byte
			span  [8]byte
		}{"/s.S/One": {t1, p1}, "/s.S/Three": {t3, p3}}[s.Path]
		if ok && (s.TraceID != want.trace || s.ParentID != want.span) {
			t.Errorf("%s: trace %s parent %s, want its claim's", s.Path, s.TraceID, s.ParentID)
		}
		if (s.Path == "/s.S/Three") != (s.SpanID == s3) {
			t.Errorf("%s: span %s (the kernel decided %x for /s.S/Three only)", s.Path, s.SpanID, s3)
		}
		if !ok && (s.ParentID.IsValid() || s.TraceID == t5) {
			t.Errorf("%s: trace %s parent %s, want a trace of its own", s.Path, s.TraceID, s.ParentID)
		}
	}
	if got := r.c.Stats().H2ClaimsUnmatched.Load(); got != 0 {
		t.Errorf("unmatched claims %d before they expire", got)
	}
	r.c.Expire(2*ms + uint64(h2ClaimTTL.Nanoseconds()) + 1)
	if got := r.c.Stats().H2ClaimsUnmatched.Load(); got != 3 || len(r.c.h2claims) != 0 {
		t.Errorf("unmatched claims %d (want 3), %d left", got, len(r.c.h2claims))
	}
}

// Claims that give a stream no parent: a JVM agent's claim of a stream of
// no request (a zero trace), alone or after one an earlier write of the
// thread left unused for the same id (another connection's stream), and
// two claims of one writer for one stream id, both naming requests. Either way the
// write that opens the stream takes no parent: a valid trace of its own,
// and the claim that cannot be used is counted.
func TestH2ClaimsThatGiveNoParent(t *testing.T) {
	for _, tc := range []struct {
		name   string
		traces [][16]byte // the claims of stream 3, in order
	}{
		{"of no request", [][16]byte{{}}},
		{"of no request, after one left unused", [][16]byte{{9, 9}, {}}},
		{"twice", [][16]byte{{1, 1}, {2, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRec(t, Options{})
			for i, trace := range tc.traces {
				parent := [8]byte{}
				if trace != ([16]byte{}) {
					parent[0] = byte(i + 1)
				}
				r.c.Handle(&event.Event{Kind: event.KindH2Claim, PID: 10, TID: 12, Time: uint64(i+1) * ms, Goroutine: 12,
					H2Stream: 3, TraceID: trace, ParentID: parent, TraceFlags: 1})
			}
			req := newH2Copy(true)
			req.frame(4, 0, 0, 0, nil)
			req.headers(3, true, ":method", "GET", ":scheme", "https", ":authority", "up:9090", ":path", "/x")
			r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 100, PID: 10, TID: 12, Key: 12, Dir: event.Egress,
				Time: 3 * ms, Capture: event.CaptureH2, Goroutine: 12, Local: cliAddr, Remote: upAddr,
				Payload: []byte(req.take())})
			resp := newH2Copy(false)
			resp.headers(3, true, ":status", "200")
			r.h2data(100, event.Ingress, 5*ms, resp.take(), event.CaptureH2)
			if len(r.spans) != 1 {
				t.Fatalf("%d spans, want 1", len(r.spans))
			}
			s := r.spans[0]
			if !s.TraceID.IsValid() || s.ParentID.IsValid() || slices.Contains(tc.traces, [16]byte(s.TraceID)) {
				t.Errorf("trace %s parent %s, want a new trace", s.TraceID, s.ParentID)
			}
			if got := r.c.Stats().H2ClaimsUnmatched.Load(); got != uint64(len(tc.traces)-1) || len(r.c.h2claims) != 0 {
				t.Errorf("unmatched claims %d (want %d: all but the last), %d left", got, len(tc.traces)-1, len(r.c.h2claims))
			}
		})
	}
}
