package correlate

import (
	"net/netip"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/spans"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

const ms = uint64(time.Millisecond)

type rec struct {
	c     *Correlator
	spans []spans.Span
}

func newRec(t *testing.T, opts Options) *rec {
	t.Helper()
	r := &rec{}
	opts.Clock = fixedClock(epoch)
	r.c = New(opts, func(s *spans.Span) { r.spans = append(r.spans, *s) })
	return r
}

var (
	srvAddr = netip.MustParseAddrPort("127.0.0.1:8080")
	cliAddr = netip.MustParseAddrPort("127.0.0.1:50000")
	upAddr  = netip.MustParseAddrPort("127.0.0.1:9090")
)

// data feeds one captured call; the whole payload is captured.
func (r *rec) data(conn uint64, pid, tid uint32, dir event.Direction, ts uint64, payload string) {
	local, remote := srvAddr, cliAddr
	if conn >= 100 { // connections the process opened itself
		local, remote = cliAddr, upAddr
	}
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: conn, PID: pid, TID: tid, Key: tid, Dir: dir,
		Time: ts, Bytes: uint32(len(payload)), Payload: []byte(payload), Local: local, Remote: remote})
}

func (r *rec) close(conn uint64, ts uint64) {
	r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: conn, Time: ts})
}

const (
	getHello = "GET /hello?x=1 HTTP/1.1\r\nHost: svc:8080\r\nUser-Agent: curl/8\r\n\r\n"
	ok200    = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
)

func TestServerSpanKeepAlive(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Ingress, 1*ms, getHello)
	r.data(1, 10, 11, event.Egress, 6*ms, ok200)
	r.data(1, 10, 11, event.Ingress, 10*ms, "GET /users/42 HTTP/1.1\r\nHost: svc\r\n\r\n")
	r.data(1, 10, 11, event.Egress, 13*ms, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n")
	if len(r.spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(r.spans))
	}
	a, b := r.spans[0], r.spans[1]
	if a.Kind != spans.KindServer || a.Name != "GET /hello" || a.Path != "/hello" || a.Query != "" ||
		a.StatusCode != 200 || a.Host != "svc:8080" || a.UserAgent != "curl/8" || a.Proto != "1.1" {
		t.Errorf("first span: %+v", a)
	}
	if !a.Start.Equal(epoch.Add(time.Millisecond)) || a.Duration() != 5*time.Millisecond {
		t.Errorf("first span times: start %v duration %v", a.Start, a.Duration())
	}
	if a.Local != srvAddr || a.Remote != cliAddr || a.PID != 10 || a.TID != 11 {
		t.Errorf("first span endpoints: %+v", a)
	}
	if b.Name != "GET /users/{id}" || b.StatusCode != 503 || !b.IsError() {
		t.Errorf("second span: %+v", b)
	}
	if a.TraceID == b.TraceID || a.ParentID.IsValid() {
		t.Error("two requests without traceparent must be two root traces")
	}
}

func TestPipelining(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Ingress, 1*ms, "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\nGET /c HTTP/1.1\r\nHost: h\r\n\r\n")
	r.data(1, 10, 11, event.Egress, 2*ms, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
	r.data(1, 10, 11, event.Egress, 3*ms, "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
	if len(r.spans) != 3 {
		t.Fatalf("got %d spans", len(r.spans))
	}
	for i, want := range []struct {
		path   string
		status int
	}{{"/a", 200}, {"/b", 404}, {"/c", 201}} {
		if r.spans[i].Path != want.path || r.spans[i].StatusCode != want.status {
			t.Errorf("span %d: %s %d, want %s %d", i, r.spans[i].Path, r.spans[i].StatusCode, want.path, want.status)
		}
	}
}

// Spans the kernel gave no ids to are traces of their own, counted: user
// space never guesses a parent (by thread or by a traceparent it re-reads),
// since the kernel alone knows what went on the wire.
func TestNoKernelIDsNoGuessedParent(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Ingress, 1*ms, "GET /call HTTP/1.1\r\nHost: front\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\n\r\n")
	// The same thread calls upstream while it serves /call.
	r.data(100, 10, 11, event.Egress, 2*ms, "GET /hello HTTP/1.1\r\nHost: up\r\n\r\n")
	r.data(100, 10, 11, event.Ingress, 4*ms, ok200)
	r.data(1, 10, 11, event.Egress, 5*ms, ok200)
	if len(r.spans) != 2 {
		t.Fatalf("got %d spans", len(r.spans))
	}
	client, server := r.spans[0], r.spans[1]
	if server.ParentID.IsValid() || server.TraceID.String() == "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("user space re-read the traceparent: %+v", server)
	}
	if client.ParentID.IsValid() || client.TraceID == server.TraceID {
		t.Errorf("user space guessed a parent by thread: client %+v server %+v", client, server)
	}
	if client.Local != cliAddr || client.Remote != upAddr {
		t.Errorf("client endpoints %v -> %v", client.Local, client.Remote)
	}
	if n := r.c.Stats().NoKernelCtx.Load(); n != 2 {
		t.Errorf("spans without kernel ids counted %d, want 2", n)
	}
	if n := r.c.Stats().ClientRoots.Load(); n != 1 {
		t.Errorf("client spans that started a trace counted %d, want 1", n)
	}
}

// A span's duration is the difference of its kernel timestamps even when
// the wall-clock offset is re-read between its start and its end.
func TestDurationFromKernelTimestamps(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Ingress, 1*ms, getHello)
	r.c.opts.Clock.offset.Add(int64(-2 * time.Millisecond)) // the offset moved at a refresh
	r.data(1, 10, 11, event.Egress, 151*ms, ok200)
	if len(r.spans) != 1 || r.spans[0].Duration() != 150*time.Millisecond {
		t.Fatalf("spans: %+v", r.spans)
	}
}

func TestInterleavedConnectionsOnOneThread(t *testing.T) {
	r := newRec(t, Options{})
	// An event-loop thread reads two requests before answering either.
	r.data(1, 10, 11, event.Ingress, 1*ms, "GET /one HTTP/1.1\r\nHost: h\r\n\r\n")
	r.data(2, 10, 11, event.Ingress, 2*ms, "GET /two HTTP/1.1\r\nHost: h\r\n\r\n")
	r.data(2, 10, 11, event.Egress, 3*ms, "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
	r.data(1, 10, 11, event.Egress, 4*ms, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	if len(r.spans) != 2 {
		t.Fatalf("got %d spans", len(r.spans))
	}
	if r.spans[0].Path != "/two" || r.spans[0].StatusCode != 202 || r.spans[1].Path != "/one" || r.spans[1].StatusCode != 200 {
		t.Errorf("responses paired across connections: %+v", r.spans)
	}
}

func TestUnansweredRequests(t *testing.T) {
	r := newRec(t, Options{RequestTimeout: time.Second})
	r.data(1, 10, 11, event.Ingress, 1*ms, getHello)
	r.data(2, 10, 11, event.Ingress, 1*ms, getHello)
	r.c.Expire(500 * ms)
	if len(r.spans) != 0 {
		t.Fatal("expired too early")
	}
	r.close(2, 600*ms)
	if len(r.spans) != 1 || r.spans[0].ErrorType != "connection_closed" {
		t.Fatalf("close did not end the request: %+v", r.spans)
	}
	r.c.Expire(1200 * ms)
	if len(r.spans) != 2 || r.spans[1].ErrorType != "timeout" || !r.spans[1].IsError() {
		t.Fatalf("timeout did not end the request: %+v", r.spans)
	}
	if r.c.Pending() != 0 {
		t.Errorf("%d requests still pending", r.c.Pending())
	}
}

func TestCloseDelimitedResponse(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Ingress, 1*ms, "GET / HTTP/1.0\r\n\r\n")
	r.data(1, 10, 11, event.Egress, 2*ms, "HTTP/1.0 200 OK\r\nContent-Type: text/html\r\n\r\n<html>")
	r.data(1, 10, 11, event.Egress, 3*ms, "</html>")
	r.close(1, 4*ms)
	if len(r.spans) != 1 {
		t.Fatalf("got %d spans", len(r.spans))
	}
	s := r.spans[0]
	if s.StatusCode != 200 || s.ErrorType != "" || s.Proto != "1.0" || s.ResponseBodySize != 13 {
		t.Errorf("span %+v", s)
	}
}

func TestBinaryProtocolIsIgnored(t *testing.T) {
	r := newRec(t, Options{})
	for i := range 40 {
		r.data(1, 10, 11, event.Ingress, uint64(i+1)*ms, "*1\r\n$4\r\nPING\r\n")
		r.data(1, 10, 11, event.Egress, uint64(i+1)*ms, "+PONG\r\n")
	}
	if len(r.spans) != 0 || r.c.Stats().NotHTTP.Load() != 1 {
		t.Fatalf("spans %d, not-http %d", len(r.spans), r.c.Stats().NotHTTP.Load())
	}
}

func TestJoinMidStream(t *testing.T) {
	r := newRec(t, Options{})
	// weft starts while a response body is flowing on a keep-alive connection.
	r.data(1, 10, 11, event.Egress, 1*ms, "rest of an earlier body")
	r.data(1, 10, 11, event.Ingress, 2*ms, getHello)
	r.data(1, 10, 11, event.Egress, 3*ms, ok200)
	if len(r.spans) != 1 || r.spans[0].StatusCode != 200 {
		t.Fatalf("spans: %+v", r.spans)
	}
}

func TestQueryKeptOnlyWhenAsked(t *testing.T) {
	r := newRec(t, Options{KeepQuery: true})
	r.data(1, 10, 11, event.Ingress, 1*ms, getHello)
	r.data(1, 10, 11, event.Egress, 2*ms, ok200)
	if len(r.spans) != 1 || r.spans[0].Query != "x=1" {
		t.Fatalf("spans: %+v", r.spans)
	}
}

func TestTruncatedCaptureUsesTotals(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Ingress, 1*ms, getHello)
	// A 100 kB response whose capture holds only its head.
	head := "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n"
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Egress,
		Time: 2 * ms, Bytes: uint32(len(head) + 60000), Payload: []byte(head)})
	if len(r.spans) != 0 {
		t.Fatal("ended before the body was sent")
	}
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Egress,
		Time: 9 * ms, Bytes: 40000, Payload: []byte("xxxx")})
	if len(r.spans) != 1 || r.spans[0].Duration() != 8*time.Millisecond || r.spans[0].ResponseBodySize != 100000 {
		t.Fatalf("spans: %+v", r.spans)
	}
}

func TestKernelAssignedIDsWin(t *testing.T) {
	r := newRec(t, Options{})
	trace := [16]byte{1, 2, 3}
	srv := [8]byte{9}
	cli := [8]byte{7}
	remoteParent := [8]byte{5}
	in := &event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress, Time: 1 * ms,
		Payload: []byte(getHello), Local: srvAddr, Remote: cliAddr,
		Ctx: event.CtxServer, TraceID: trace, SpanID: srv, ParentID: remoteParent, TraceFlags: 1}
	in.Bytes = uint32(len(in.Payload))
	r.c.Handle(in)
	out := &event.Event{Kind: event.KindData, ConnID: 100, PID: 10, TID: 11, Key: 11, Dir: event.Egress, Time: 2 * ms,
		Payload: []byte("GET /up HTTP/1.1\r\nHost: up\r\n\r\n"), Local: cliAddr, Remote: upAddr,
		Ctx: event.CtxClient, TraceID: trace, SpanID: cli, ParentID: srv, TraceFlags: 1}
	out.Bytes = uint32(len(out.Payload))
	r.c.Handle(out)
	r.data(100, 10, 11, event.Ingress, 3*ms, ok200)
	r.data(1, 10, 11, event.Egress, 4*ms, ok200)
	if len(r.spans) != 2 {
		t.Fatalf("got %d spans", len(r.spans))
	}
	c, s := r.spans[0], r.spans[1]
	if s.TraceID != trace || s.SpanID != srv || s.ParentID != remoteParent || !s.ParentRemote {
		t.Errorf("server span ignored the kernel's ids: %+v", s)
	}
	if c.TraceID != trace || c.SpanID != cli || c.ParentID != srv || c.ParentRemote {
		t.Errorf("client span ignored the kernel's ids: %+v", c)
	}
	if n := r.c.Stats().ClientRoots.Load(); n != 0 {
		t.Errorf("a client span with a parent counted as starting a trace (%d)", n)
	}
}

// A request head split across segments (as sk_msg injection can split it):
// the kernel decides the server span on the first, finds the traceparent
// in the second and says so; the span joins that trace.
func TestTraceparentInLaterSegmentJoinsTrace(t *testing.T) {
	r := newRec(t, Options{})
	own := [16]byte{1}
	srv := [8]byte{9}
	remoteTrace := [16]byte{4, 4}
	remoteParent := [8]byte{5}
	first := &event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress, Time: 1 * ms,
		Payload: []byte("GET /hello HTTP/1.1\r\n"), Local: srvAddr, Remote: cliAddr,
		Ctx: event.CtxServer, TraceID: own, SpanID: srv, TraceFlags: 1}
	first.Bytes = uint32(len(first.Payload))
	r.c.Handle(first)
	more := &event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress, Time: 1 * ms,
		Payload: []byte("traceparent: 00-04040000000000000000000000000000-0500000000000000-01\r\nHost: x\r\n\r\n"),
		Local:   srvAddr, Remote: cliAddr,
		Ctx: event.CtxServerCont, TraceID: remoteTrace, SpanID: srv, ParentID: remoteParent, TraceFlags: 1}
	more.Bytes = uint32(len(more.Payload))
	r.c.Handle(more)
	r.data(1, 10, 11, event.Egress, 4*ms, ok200)
	if len(r.spans) != 1 {
		t.Fatalf("got %d spans", len(r.spans))
	}
	if s := r.spans[0]; s.TraceID != remoteTrace || s.SpanID != srv || s.ParentID != remoteParent || !s.ParentRemote {
		t.Errorf("server span did not join the trace found later: %+v", s)
	}
}
