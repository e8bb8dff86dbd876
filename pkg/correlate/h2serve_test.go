package correlate

import (
	"maps"
	"net/netip"
	"slices"
	"testing"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/spans"
)

// The kernel's ids of grpc-go server streams (h2serve.go): a report
// naming the goroutine that read the connection's first frames (the
// reader's creator) or the reader itself gives its stream those ids, even
// after the reader took over; a stream without one keeps the traceparent
// rule; reports of a goroutine that read no followed connection, or of a
// stream not open, are counted and change nothing.
func TestH2ServedStreams(t *testing.T) {
	r := newRec(t, Options{})
	read := func(goroutine uint64, ts uint64, payload string) {
		r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress, Time: ts,
			Bytes: uint32(len(payload)), Payload: []byte(payload), Local: srvAddr, Remote: cliAddr, Capture: event.CaptureH2,
			Goroutine: goroutine})
	}
	serve := func(reader, creator uint64, stream uint32, ts uint64, trace [16]byte, span, parent [8]byte) {
		r.c.Handle(&event.Event{Kind: event.KindH2Serve, PID: 10, TID: 12, Time: ts, Goroutine: reader, Creator: creator,
			H2Stream: stream, TraceID: trace, SpanID: span, ParentID: parent, TraceFlags: 1})
	}
	call := func(req *h2copy, stream uint32, path string) *h2copy {
		return req.headers(stream, true, ":method", "POST", ":scheme", "http", ":authority", "svc:9090", ":path", path,
			"content-type", "application/grpc", "traceparent", tp)
	}
	req := newH2Copy(true)
	// The connection's goroutine (5) reads the preface, SETTINGS and the
	// first streams; the reader it starts (6) decodes them, then reads.
	read(5, 1*ms, call(call(req.frame(4, 0, 0, 0, nil), 1, "/s.S/One"), 3, "/s.S/Three").take())
	t1, s1, p1 := [16]byte{1, 1}, [8]byte{1, 0xa}, [8]byte{1, 0xb}
	t3, s3, p3 := [16]byte{3, 3}, [8]byte{3, 0xa}, [8]byte{3, 0xb}
	t5, s5, p5 := [16]byte{5, 5}, [8]byte{5, 0xa}, [8]byte{5, 0xb}
	serve(6, 5, 1, 2*ms, t1, s1, p1)
	serve(6, 5, 3, 2*ms, t3, s3, p3)
	read(6, 3*ms, call(req, 5, "/s.S/Five").take())
	serve(6, 5, 5, 4*ms, t5, s5, p5)
	read(6, 4*ms, call(req, 7, "/s.S/Seven").take()) // no report: the traceparent's trace
	serve(9, 8, 7, 5*ms, t5, s5, p5)                 // a goroutine that read nothing followed
	serve(6, 5, 11, 5*ms, t5, s5, p5)                // a stream not open
	resp := newH2Copy(false)
	for _, s := range []uint32{3, 1, 7, 5} {
		resp.headers(s, true, ":status", "200", "grpc-status", "0")
	}
	r.h2data(1, event.Egress, 6*ms, resp.take(), event.CaptureH2)
	if len(r.spans) != 4 {
		t.Fatalf("%d spans, want 4", len(r.spans))
	}
	want := map[string]struct {
		trace        [16]byte
		span, parent [8]byte
	}{"/s.S/One": {t1, s1, p1}, "/s.S/Three": {t3, s3, p3}, "/s.S/Five": {t5, s5, p5}}
	for _, s := range r.spans {
		w, ok := want[s.Path]
		switch {
		case s.Kind != spans.KindServer:
			t.Errorf("%s: kind %v", s.Path, s.Kind)
		case ok && (s.TraceID != w.trace || s.SpanID != w.span || s.ParentID != w.parent || !s.ParentRemote):
			t.Errorf("%s: trace %s span %s parent %s (remote %v), want the kernel's, a remote parent", s.Path, s.TraceID,
				s.SpanID, s.ParentID, s.ParentRemote)
		case !ok && (s.TraceID.String() != tp[3:35] || s.ParentID.String() != tp[36:52]):
			t.Errorf("%s: trace %s parent %s, want the traceparent's", s.Path, s.TraceID, s.ParentID)
		}
	}
	if got := r.c.Stats().H2ServedUnmatched.Load(); got != 2 {
		t.Errorf("unmatched reports %d, want 2", got)
	}
	r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: 1, PID: 10, Time: 8 * ms})
	if len(r.c.h2readers) != 0 {
		t.Errorf("%d readers left after the close", len(r.c.h2readers))
	}
}

// net/http's HTTP/2 server decodes each stream on the connection's serve
// goroutine, which reads nothing: goroutines it created read. A report
// naming it goes to the connection those goroutines read; when it created
// the readers of two open connections, the report is for neither and is
// counted, until one of them closes.
func TestH2ServedByReadersCreator(t *testing.T) {
	r := newRec(t, Options{})
	read := func(conn uint64, reader, creator uint64, ts uint64, payload string) {
		r.c.Handle(&event.Event{Kind: event.KindData, ConnID: conn, PID: 10, TID: 11, Key: 11, Dir: event.Ingress, Time: ts,
			Bytes: uint32(len(payload)), Payload: []byte(payload), Local: srvAddr, Remote: cliAddr, Capture: event.CaptureH2,
			Goroutine: reader, Creator: creator})
	}
	serve := func(g uint64, stream uint32, ts uint64, trace [16]byte) {
		r.c.Handle(&event.Event{Kind: event.KindH2Serve, PID: 10, TID: 12, Time: ts, Goroutine: g, Creator: 1,
			H2Stream: stream, TraceID: trace, SpanID: [8]byte{trace[0], 0xa}, ParentID: [8]byte{trace[0], 0xb}, TraceFlags: 1})
	}
	call := func(req *h2copy, stream uint32, path string) string {
		return req.headers(stream, true, ":method", "GET", ":scheme", "http", ":authority", "svc", ":path", path,
			"traceparent", tp).take()
	}
	a, b, c := newH2Copy(true), newH2Copy(true), newH2Copy(true)
	read(1, 21, 20, 1*ms, a.frame(4, 0, 0, 0, nil).take()) // serve goroutine 20's preface reader
	read(1, 22, 20, 2*ms, call(a, 1, "/a/1"))              // and its frame reader
	read(2, 32, 30, 2*ms, call(b, 1, "/b/1"))
	serve(20, 1, 3*ms, [16]byte{0xa1})
	serve(30, 1, 3*ms, [16]byte{0xb1})
	read(3, 42, 20, 4*ms, call(c, 1, "/c/1")) // 20 now created readers of two connections
	serve(20, 1, 5*ms, [16]byte{0xc1})        // for neither
	r.h2data(3, event.Egress, 6*ms, newH2Copy(false).headers(1, true, ":status", "200").take(), event.CaptureH2)
	r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: 3, PID: 10, Time: 6 * ms})
	read(1, 22, 20, 7*ms, call(a, 3, "/a/3")) // the first connection's alone again
	serve(20, 3, 7*ms, [16]byte{0xa3})
	resp := newH2Copy(false)
	r.h2data(1, event.Egress, 8*ms, resp.headers(1, true, ":status", "200").headers(3, true, ":status", "200").take(),
		event.CaptureH2)
	r.h2data(2, event.Egress, 8*ms, newH2Copy(false).headers(1, true, ":status", "200").take(), event.CaptureH2)
	want := map[string]byte{"/a/1": 0xa1, "/b/1": 0xb1, "/a/3": 0xa3}
	if len(r.spans) != 4 {
		t.Fatalf("%d spans, want 4", len(r.spans))
	}
	for _, s := range r.spans {
		w, ok := want[s.Path]
		switch {
		case ok && (s.TraceID != [16]byte{w} || s.SpanID != [8]byte{w, 0xa}):
			t.Errorf("%s: trace %s span %s, want the kernel's", s.Path, s.TraceID, s.SpanID)
		case !ok && s.TraceID.String() != tp[3:35]:
			t.Errorf("%s: trace %s, want the traceparent's", s.Path, s.TraceID)
		}
	}
	if got := r.c.Stats().H2ServedUnmatched.Load(); got != 1 {
		t.Errorf("unmatched reports %d, want 1", got)
	}
	for conn := range uint64(2) {
		r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: conn + 1, PID: 10, Time: 9 * ms})
	}
	if len(r.c.h2readers) != 0 || len(r.c.h2creators) != 0 {
		t.Errorf("%d readers, %d creators left after the closes", len(r.c.h2readers), len(r.c.h2creators))
	}
}

// A server connection whose client weft does not follow on this host has
// its reader, and the reader's creator, marked fresh for the kernel once
// a read names them; one whose client weft follows here is not (its
// streams go under their client spans). A report without parent (a new
// trace the kernel started) gives its stream a root span with the
// kernel's ids, counted; the marks go when the connection closes, when a
// creator names readers of two connections, or when the client end of
// the connection appears (its first write's event read after the
// server's read of it).
func TestH2FreshMarks(t *testing.T) {
	marks := map[h2ReaderKey]bool{}
	r := newRec(t, Options{
		NetNS:   func(uint32) (uint64, bool) { return 1, true },
		H2Fresh: func(pid uint32, g uint64, fresh bool) { marks[h2ReaderKey{pid, g}] = fresh },
	})
	cli := netip.MustParseAddrPort("127.0.0.1:41000")
	lone := netip.MustParseAddrPort("127.0.0.1:41001")
	srv := netip.MustParseAddrPort("127.0.0.1:9000")
	read := func(conn uint64, remote netip.AddrPort, reader, creator, ts uint64, payload string) {
		r.c.Handle(&event.Event{Kind: event.KindData, ConnID: conn, PID: 2, TID: 2, Key: 2, Dir: event.Ingress, Time: ts,
			Bytes: uint32(len(payload)), Payload: []byte(payload), Local: srv, Remote: remote, Capture: event.CaptureH2,
			Goroutine: reader, Creator: creator})
	}
	get := func(w *h2copy, stream uint32, path string) string {
		return w.headers(stream, true, ":method", "GET", ":scheme", "http", ":authority", "svc", ":path", path).take()
	}
	// Connection 1: its client (pid 1) is followed here.
	creq, sreq := newH2Copy(true), newH2Copy(true)
	r.h2end(1, 1, cli, srv, event.Egress, 1*ms, get(creq, 1, "/linked"))
	read(2, cli, 21, 20, 2*ms, get(sreq, 1, "/linked"))
	// Connection 3: its client is not.
	lreq := newH2Copy(true)
	read(3, lone, 31, 30, 3*ms, get(lreq, 1, "/lone"))
	want := map[h2ReaderKey]bool{{2, 31}: true, {2, 30}: true}
	if !maps.Equal(marks, want) {
		t.Fatalf("marks %v, want %v", marks, want)
	}
	trace, span := [16]byte{0xf1}, [8]byte{0xf2}
	r.c.Handle(&event.Event{Kind: event.KindH2Serve, PID: 2, TID: 2, Time: 4 * ms, Goroutine: 31, Creator: 30, H2Stream: 1,
		TraceID: trace, SpanID: span, TraceFlags: 1})
	r.h2end(3, 2, srv, lone, event.Egress, 5*ms, newH2Copy(false).headers(1, true, ":status", "200").take())
	if len(r.spans) != 1 {
		t.Fatalf("%d spans, want 1", len(r.spans))
	}
	if s := r.spans[0]; s.Path != "/lone" || s.TraceID != trace || s.SpanID != span || s.ParentID.IsValid() || s.ParentRemote {
		t.Errorf("span %s %s %s parent %s (remote %v), want the kernel's new trace", s.Path, s.TraceID, s.SpanID,
			s.ParentID, s.ParentRemote)
	}
	if got := r.c.Stats().H2ServedNew.Load(); got != 1 {
		t.Errorf("new traces served %d, want 1", got)
	}
	// Goroutine 30 creates the reader of another lone connection: it
	// names neither.
	read(4, netip.MustParseAddrPort("127.0.0.1:41002"), 41, 30, 6*ms, get(newH2Copy(true), 1, "/lone2"))
	want = map[h2ReaderKey]bool{{2, 31}: true, {2, 30}: false, {2, 41}: true}
	if !maps.Equal(marks, want) {
		t.Fatalf("marks %v, want %v", marks, want)
	}
	r.h2end(5, 1, lone, srv, event.Egress, 7*ms, get(newH2Copy(true), 3, "/late-client"))
	want = map[h2ReaderKey]bool{{2, 31}: false, {2, 30}: false, {2, 41}: true}
	if !maps.Equal(marks, want) {
		t.Fatalf("marks once connection 3's client appeared %v, want %v", marks, want)
	}
	r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: 4, PID: 2, Time: 8 * ms})
	want[h2ReaderKey{2, 41}] = false
	if !maps.Equal(marks, want) {
		t.Errorf("marks after the close %v, want %v", marks, want)
	}
}

// nginx's streams: a report naming the connection (no goroutine) gives
// the open stream it names the kernel's ids; a second report for the
// same stream, one naming a connection of another process, and one for a
// stream not open are counted and change nothing.
func TestH2ServedNamingConnection(t *testing.T) {
	r := newRec(t, Options{})
	read := func(ts uint64, payload string) {
		r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress, Time: ts,
			Bytes: uint32(len(payload)), Payload: []byte(payload), Local: srvAddr, Remote: cliAddr, Capture: event.CaptureH2})
	}
	serve := func(pid uint32, stream uint32, ts uint64, trace [16]byte, parent [8]byte) {
		r.c.Handle(&event.Event{Kind: event.KindH2Serve, ConnID: 1, PID: pid, TID: 11, Time: ts, H2Stream: stream,
			TraceID: trace, SpanID: [8]byte{trace[0], 0xa}, ParentID: parent, TraceFlags: 1})
	}
	get := func(req *h2copy, stream uint32, path string) *h2copy {
		return req.headers(stream, true, ":method", "GET", ":scheme", "https", ":authority", "web", ":path", path)
	}
	req := newH2Copy(true)
	read(1*ms, get(get(req.frame(4, 0, 0, 0, nil), 1, "/one"), 3, "/three").take())
	serve(10, 1, 2*ms, [16]byte{0x01}, [8]byte{0x01, 0xb}) // continues a traceparent
	serve(10, 3, 2*ms, [16]byte{0x03}, [8]byte{})          // a trace of its own
	serve(10, 3, 2*ms, [16]byte{0x33}, [8]byte{})          // again: the first stays
	serve(11, 1, 2*ms, [16]byte{0x11}, [8]byte{})          // another process's socket
	serve(10, 5, 2*ms, [16]byte{0x05}, [8]byte{})          // not open
	resp := newH2Copy(false)
	r.h2data(1, event.Egress, 3*ms, resp.headers(3, true, ":status", "200").headers(1, true, ":status", "200").take(),
		event.CaptureH2)
	if len(r.spans) != 2 {
		t.Fatalf("%d spans, want 2", len(r.spans))
	}
	want := map[string]struct {
		trace  byte
		parent [8]byte
	}{"/one": {0x01, [8]byte{0x01, 0xb}}, "/three": {0x03, [8]byte{}}}
	for _, s := range r.spans {
		w := want[s.Path]
		if s.Kind != spans.KindServer || s.TraceID != [16]byte{w.trace} || s.SpanID != [8]byte{w.trace, 0xa} ||
			s.ParentID != w.parent || s.ParentRemote != (w.parent != [8]byte{}) {
			t.Errorf("%s: %v trace %s span %s parent %s (remote %v), want the kernel's first report", s.Path, s.Kind,
				s.TraceID, s.SpanID, s.ParentID, s.ParentRemote)
		}
	}
	st := r.c.Stats()
	if got := st.H2ServedUnmatched.Load(); got != 3 {
		t.Errorf("unmatched reports %d, want 3", got)
	}
	if got := st.H2ServedNew.Load(); got != 1 {
		t.Errorf("streams started in the kernel %d, want 1", got)
	}
}

// net/http's serve goroutine reads an h2c connection's preface, then
// creates the goroutine that reads on: the reader changes from the
// goroutine that decodes to one it created. The decoding goroutine stays
// marked throughout (the kernel may decide a stream it decodes at any
// moment); only the first reader's creator, no longer named, is unmarked,
// and only after the new marks are set.
func TestH2FreshReaderHandover(t *testing.T) {
	type call struct {
		g     uint64
		fresh bool
	}
	var calls []call
	r := newRec(t, Options{
		NetNS:   func(uint32) (uint64, bool) { return 1, true },
		H2Fresh: func(pid uint32, g uint64, fresh bool) { calls = append(calls, call{g, fresh}) },
	})
	cli := netip.MustParseAddrPort("127.0.0.1:41000")
	srv := netip.MustParseAddrPort("127.0.0.1:9000")
	read := func(reader, creator, ts uint64, payload string) {
		r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 1, PID: 2, TID: 2, Key: 2, Dir: event.Ingress, Time: ts,
			Bytes: uint32(len(payload)), Payload: []byte(payload), Local: srv, Remote: cli, Capture: event.CaptureH2,
			Goroutine: reader, Creator: creator})
	}
	req := newH2Copy(true)
	read(50, 49, 1*ms, req.frame(4, 0, 0, 0, nil).take()) // the preface and SETTINGS, by the serve goroutine
	read(51, 50, 2*ms, req.headers(1, true, ":method", "GET", ":scheme", "http", ":authority", "svc",
		":path", "/one").take()) // its reader
	want := []call{{50, true}, {49, true}, {51, true}, {50, true}, {49, false}}
	if !slices.Equal(calls, want) {
		t.Errorf("marks set and taken back %v, want %v", calls, want)
	}
}
