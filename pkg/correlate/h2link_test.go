package correlate

import (
	"net/netip"
	"testing"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/spans"
)

// h2end feeds one HTTP/2 copy of connection conn of process pid, whose
// local and remote addresses are given.
func (r *rec) h2end(conn uint64, pid uint32, local, remote netip.AddrPort, dir event.Direction, ts uint64, payload string) {
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: conn, PID: pid, TID: pid, Key: pid, Dir: dir, Time: ts,
		Bytes: uint32(len(payload)), Payload: []byte(payload), Local: local, Remote: remote, Capture: event.CaptureH2})
}

// Both ends of HTTP/2 connections on this host: a server stream is the
// child of the client span of the same connection and stream, whether the
// server's or the client's end finishes first, and when the server's
// answer is read before the client's request (it waits), and when the
// client closed first; a stream of another connection, or of a loopback
// connection in another network namespace, or of a server end that may
// belong to the closed connection whose addresses a new one took, starts
// its own trace once its wait is over.
func TestH2SameHostLink(t *testing.T) {
	ns := map[uint32]uint64{1: 4026531840, 2: 4026531840, 3: 4026532000}
	r := newRec(t, Options{NetNS: func(pid uint32) (uint64, bool) { v, ok := ns[pid]; return v, ok }})
	cli := netip.MustParseAddrPort("127.0.0.1:41000")
	other := netip.MustParseAddrPort("127.0.0.1:41001")
	srv := netip.MustParseAddrPort("127.0.0.1:9000")
	get := func(w *h2copy, stream uint32, path string) string {
		return w.headers(stream, true, ":method", "GET", ":scheme", "http", ":authority", "svc", ":path", path).take()
	}
	ok := func(w *h2copy, stream uint32) string { return w.headers(stream, true, ":status", "200").take() }
	// pid 1 calls pid 2 (same namespace) on one connection, pid 3 (another
	// namespace, same addresses as seen there) on another.
	creq, cresp := newH2Copy(true), newH2Copy(false)
	sreq, sresp := newH2Copy(true), newH2Copy(false)
	r.h2end(1, 1, cli, srv, event.Egress, 1*ms, get(creq, 1, "/first"))
	r.h2end(2, 2, srv, cli, event.Ingress, 2*ms, get(sreq, 1, "/first"))
	r.h2end(1, 1, cli, srv, event.Egress, 3*ms, get(creq, 3, "/second"))
	r.h2end(2, 2, srv, cli, event.Ingress, 4*ms, get(sreq, 3, "/second"))
	r.h2end(2, 2, srv, cli, event.Egress, 5*ms, ok(sresp, 1)) // the server's end first
	r.h2end(1, 1, cli, srv, event.Ingress, 6*ms, ok(cresp, 1))
	r.h2end(1, 1, cli, srv, event.Ingress, 7*ms, ok(cresp, 3)) // the client's end first
	r.h2end(2, 2, srv, cli, event.Egress, 8*ms, ok(sresp, 3))
	oreq, oresp := newH2Copy(true), newH2Copy(false)
	r.h2end(3, 3, srv, other, event.Ingress, 9*ms, get(oreq, 1, "/other-conn"))
	r.h2end(3, 3, srv, other, event.Egress, 10*ms, ok(oresp, 1))
	nreq, nresp := newH2Copy(true), newH2Copy(false)
	r.h2end(4, 3, srv, cli, event.Ingress, 11*ms, get(nreq, 5, "/other-netns"))
	r.h2end(4, 3, srv, cli, event.Egress, 12*ms, ok(nresp, 5))
	// The server answers stream 5 before the client's event of the write
	// that opened it is read: its span waits for it.
	r.h2end(2, 2, srv, cli, event.Ingress, 13*ms, get(sreq, 5, "/late"))
	r.h2end(2, 2, srv, cli, event.Egress, 14*ms, ok(sresp, 5))
	r.h2end(1, 1, cli, srv, event.Egress, 12*ms, get(creq, 5, "/late"))
	r.h2end(1, 1, cli, srv, event.Ingress, 15*ms, ok(cresp, 5))
	if len(r.spans) != 6 {
		t.Fatalf("%d spans before the unlinked ones' wait ended, want 6", len(r.spans))
	}
	r.c.Expire(11*ms + uint64(linkWait.Nanoseconds()))
	if len(r.spans) != 7 {
		t.Fatalf("%d spans when only one wait had ended, want 7", len(r.spans))
	}
	r.c.Expire(13*ms + uint64(linkWait.Nanoseconds()))
	if len(r.spans) != 8 {
		t.Fatalf("%d spans, want 8", len(r.spans))
	}
	clients, servers := map[string]spans.Span{}, map[string]spans.Span{}
	for _, s := range r.spans {
		if s.Kind == spans.KindClient {
			clients[s.Path] = s
		} else {
			servers[s.Path] = s
		}
	}
	for _, p := range []string{"/first", "/second", "/late"} {
		c, s := clients[p], servers[p]
		if c.ParentID.IsValid() || s.TraceID != c.TraceID || s.ParentID != c.SpanID || !s.ParentRemote || s.SpanID == c.SpanID {
			t.Errorf("%s: client %s/%s, server %s under %s: want the server under the client", p, c.TraceID, c.SpanID, s.TraceID, s.ParentID)
		}
	}
	for _, p := range []string{"/other-conn", "/other-netns"} {
		if s := servers[p]; s.ParentID.IsValid() {
			t.Errorf("%s: server span under %s, want a trace of its own", p, s.ParentID)
		}
	}
	if got := r.c.Stats().H2Linked.Load(); got != 3 {
		t.Errorf("linked %d, want 3", got)
	}
	// The client reads its last answer and closes before the event of the
	// server's write of it is read: the table stays linkWait for it.
	r.h2end(1, 1, cli, srv, event.Egress, 16*ms, get(creq, 7, "/after-close"))
	r.h2end(2, 2, srv, cli, event.Ingress, 16*ms, get(sreq, 7, "/after-close"))
	r.h2end(1, 1, cli, srv, event.Ingress, 17*ms, ok(cresp, 7))
	r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: 1, PID: 1, Time: 18 * ms})
	// Meanwhile a new connection with the same addresses opens stream 1,
	// and a server end weft had not linked yet (it may be the old
	// connection's) ends its stream 1: no link from the new table.
	r.h2end(5, 1, cli, srv, event.Egress, 19*ms, get(newH2Copy(true), 1, "/new-conn"))
	r.h2end(6, 2, srv, cli, event.Ingress, 19*ms, get(newH2Copy(true), 1, "/unbound"))
	r.h2end(6, 2, srv, cli, event.Egress, 20*ms, ok(newH2Copy(false), 1))
	r.h2end(2, 2, srv, cli, event.Egress, 21*ms, ok(sresp, 7))
	r.c.Expire(20*ms + uint64(linkWait.Nanoseconds()) + 1)
	servers = map[string]spans.Span{}
	for _, s := range r.spans[8:] {
		if s.Kind == spans.KindClient {
			clients[s.Path] = s
		} else {
			servers[s.Path] = s
		}
	}
	if c, s := clients["/after-close"], servers["/after-close"]; s.ParentID != c.SpanID || s.TraceID != c.TraceID {
		t.Errorf("/after-close: server under %s, want the client span %s", s.ParentID, c.SpanID)
	}
	if s, ok := servers["/unbound"]; !ok || s.ParentID.IsValid() {
		t.Errorf("/unbound: server span %v under %s, want a trace of its own", ok, s.ParentID)
	}
	if len(r.c.h2links) != 1 || r.c.h2links[h2linkKey{client: cli, server: srv, netns: ns[1]}].closedAt != 0 {
		t.Errorf("link tables %v: want the new connection's alone", r.c.h2links)
	}
}
