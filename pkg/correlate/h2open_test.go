package correlate

import (
	"net/netip"
	"testing"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/spans"
)

// h2opened reports the ids the kernel decided for client stream `stream`
// of connection conn (h2seed.h), between local and remote: a root.
func (r *rec) h2opened(conn uint64, ts uint64, stream uint32, trace [16]byte, span [8]byte, local, remote netip.AddrPort) {
	r.h2openedUnder(conn, ts, stream, trace, span, [8]byte{}, local, remote)
}

// h2openedUnder is h2opened under parent, the request the stream's
// thread claimed it for.
func (r *rec) h2openedUnder(conn uint64, ts uint64, stream uint32, trace [16]byte, span, parent [8]byte, local, remote netip.AddrPort) {
	r.c.Handle(&event.Event{Kind: event.KindH2Open, ConnID: conn, PID: 10, TID: 11, Time: ts, H2Stream: stream,
		TraceID: trace, SpanID: span, ParentID: parent, TraceFlags: 1, Ctx: event.CtxClient, Dir: event.Egress,
		Local: local, Remote: remote})
}

// Client streams whose ids the kernel decided as their write began take
// them (a root, or under the request a claim named), two opened by one
// write included; an application's traceparent
// still wins; a decision left by an earlier connection at the socket's
// address, one for other addresses, and a second one for a stream are
// taken by no stream, and counted.
func TestH2OpenedByKernel(t *testing.T) {
	r := newRec(t, Options{})
	cli, up := cliAddr, upAddr
	const sock = 100
	conn := event.TLSConn(sock) // the plaintext's
	t1, s1 := [16]byte{1, 1}, [8]byte{1}
	t3, s3, p3 := [16]byte{3, 3}, [8]byte{3}, [8]byte{0x33}
	t5, s5 := [16]byte{5, 5}, [8]byte{5}
	t7, s7 := [16]byte{7, 7}, [8]byte{7}

	// Left by a connection that closed before its write: not the next one's.
	r.h2opened(conn, 1*ms, 9, t7, s7, cli, up)
	r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: sock, PID: 10, Time: 1 * ms})

	r.h2opened(conn, 2*ms, 1, t1, s1, cli, up)
	r.h2openedUnder(conn, 2*ms, 3, t3, s3, p3, cli, up)
	r.h2opened(conn, 2*ms, 3, t5, s5, cli, up)                                      // a retried write's: the first stays
	r.h2opened(conn, 2*ms, 5, t5, s5, cli, netip.MustParseAddrPort("10.0.0.9:443")) // another connection's addresses
	r.h2opened(conn, 2*ms, 7, t7, s7, cli, up)
	req := newH2Copy(true)
	get := func(stream uint32, path string, kv ...string) *h2copy {
		return req.headers(stream, true, append([]string{":method", "GET", ":scheme", "https", ":authority", "up:9090", ":path", path}, kv...)...)
	}
	get(1, "/one")
	get(3, "/three")
	r.h2data(conn, event.Egress, 3*ms, req.take(), event.CaptureH2)
	r.h2data(conn, event.Egress, 4*ms, get(5, "/five").take(), event.CaptureH2)
	r.h2data(conn, event.Egress, 4*ms, get(7, "/seven", "traceparent", tp).take(), event.CaptureH2)
	r.h2data(conn, event.Egress, 5*ms, get(9, "/nine").take(), event.CaptureH2)
	resp := newH2Copy(false)
	for _, s := range []uint32{3, 1, 5, 7, 9} {
		resp.headers(s, true, ":status", "200")
	}
	r.h2data(conn, event.Ingress, 6*ms, resp.take(), event.CaptureH2)

	if len(r.spans) != 5 {
		t.Fatalf("%d spans, want 5", len(r.spans))
	}
	byPath := map[string]spans.Span{}
	for _, s := range r.spans {
		byPath[s.Path] = s
	}
	for path, want := range map[string]struct {
		trace        [16]byte
		span, parent [8]byte
	}{"/one": {t1, s1, [8]byte{}}, "/three": {t3, s3, p3}} {
		s := byPath[path]
		if s.TraceID != want.trace || s.SpanID != want.span || s.ParentID != want.parent || s.TraceFlags != 1 {
			t.Errorf("%s: trace %s span %s parent %s, want the kernel's", path, s.TraceID, s.SpanID, s.ParentID)
		}
	}
	for _, path := range []string{"/five", "/nine"} {
		s := byPath[path]
		if s.ParentID.IsValid() || s.TraceID == t5 || s.TraceID == t7 || s.SpanID == s5 || s.SpanID == s7 {
			t.Errorf("%s: trace %s span %s, want a trace of its own", path, s.TraceID, s.SpanID)
		}
	}
	if s := byPath["/seven"]; s.TraceID.String() != tp[3:35] || s.ParentID.String() != tp[36:52] {
		t.Errorf("/seven: trace %s parent %s, want the traceparent's", s.TraceID, s.ParentID)
	}
	st := r.c.Stats()
	// Taken: /one, /three. Unmatched: the closed connection's, the
	// retried one, the other addresses' (taken by /five and refused).
	if got, un := st.H2Opened.Load(), st.H2OpenedUnmatched.Load(); got != 2 || un != 3 {
		t.Errorf("opened %d, unmatched %d; want 2 and 3", got, un)
	}
	if r.c.h2openedN != 0 || len(r.c.h2opened) != 0 {
		t.Errorf("%d decisions left (%d connections), want none", r.c.h2openedN, len(r.c.h2opened))
	}
}
