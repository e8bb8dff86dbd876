package correlate

import (
	"net/netip"
	"time"

	"github.com/weftdev/weft/pkg/httpparse"
	"github.com/weftdev/weft/pkg/httpparse/h2"
	"github.com/weftdev/weft/pkg/spans"
)

// HPACK leaves no room to inject a traceparent into HTTP/2 headers, so a
// server's stream would start its own trace. When weft traces both ends
// of a connection on this host it sees the client's stream open first,
// and gives the server's stream (same connection, same stream id) the
// client span as its parent.
//
// Keyed by the connection's addresses as the client sees them; loopback
// addresses name a connection only within one network namespace, so for
// them the key holds the namespace too (Options.NetNS).

// h2linkKey names one TCP connection on this host.
type h2linkKey struct {
	client, server netip.AddrPort
	netns          uint64 // loopback only; else 0
}

// linkEndedKept is how many of a connection's ended client streams keep
// their ids: the server's end of a stream is usually seen first, but its
// last write's event can come after the client read the answer.
const linkEndedKept = 64

// h2linkTable is one client connection's streams, by stream id.
type h2linkTable struct {
	key   h2linkKey
	ids   map[uint32]spanIDs
	ended []uint32 // oldest first, at most linkEndedKept
	// closedAt is when the client's connection closed (or stopped being
	// followed), 0 while open: the table stays linkWait longer, since the
	// server's last write can be read after the client's close.
	closedAt uint64
	// replacedAt is when this table took the key of a closed one still
	// kept (a new connection with the same addresses), else 0: for
	// linkWait from then, a server end not yet bound to a table may be
	// the old connection's, and links nothing here.
	replacedAt uint64
}

// linkKey is the key of cn's connection, false when it has none: once per
// HTTP/2 connection (startH2), since a loopback key asks for the namespace.
func (c *Correlator) linkKey(cn *conn, client, server netip.AddrPort) (h2linkKey, bool) {
	k := h2linkKey{client: client, server: server}
	if !client.IsValid() || !server.IsValid() {
		return k, false
	}
	if client.Addr().IsLoopback() || server.Addr().IsLoopback() {
		if c.opts.NetNS == nil {
			return k, false
		}
		ns, ok := c.opts.NetNS(cn.pid)
		if !ok {
			return k, false
		}
		k.netns = ns
	}
	return k, true
}

// linkClient opens the link table of hc, an HTTP/2 client connection
// first seen at ts.
func (c *Correlator) linkClient(hc *h2conn, ts uint64) {
	if !hc.linkable {
		return
	}
	t := &h2linkTable{key: hc.link, ids: map[uint32]spanIDs{}}
	if c.h2links == nil {
		c.h2links = map[h2linkKey]*h2linkTable{}
	}
	if c.h2links[hc.link] != nil {
		t.replacedAt = ts
	}
	c.h2links[hc.link] = t
	hc.links = t
	if srv := c.h2fresh[hc.link]; srv != nil { // its server end was read first
		c.unmarkFresh(srv)
	}
}

// unlinkClient closes hc's table at ts: its connection closed or is no
// longer followed. The table goes linkWait later (expireLinks).
func (c *Correlator) unlinkClient(hc *h2conn, ts uint64) {
	if t := hc.links; t != nil && t.closedAt == 0 {
		t.closedAt = max(ts, 1)
	}
	hc.links = nil
}

// linkTable is the client table for a stream of server connection hc
// ending at ts: the one hc's earlier streams linked to, else the one of
// its key, unless that table may be another connection's (replacedAt).
func (c *Correlator) linkTable(hc *h2conn, ts uint64) *h2linkTable {
	if hc.peer != nil {
		return hc.peer
	}
	t := c.h2links[hc.link]
	if t != nil && t.replacedAt != 0 && ts < t.replacedAt+uint64(linkWait.Nanoseconds()) {
		return nil
	}
	return t
}

// end keeps the client span of stream a while for its server's end.
func (t *h2linkTable) end(stream uint32) {
	if t == nil {
		return
	}
	if len(t.ended) == linkEndedKept {
		delete(t.ids, t.ended[0])
		t.ended = append(t.ended[:0], t.ended[1:]...)
	}
	t.ended = append(t.ended, stream)
}

// serverParent puts a server stream's span under the traceparent it
// carried, else under the client span of its other end on this host.
// linked says whether it did; when it did not, linkable says whether the
// connection can be linked (k, its key): the client's event may come yet.
func (c *Correlator) serverParent(cn *conn, x *h2.Exchange, s *spans.Span) (linked bool, k h2linkKey, linkable bool) {
	if trace, parent, flags, ok := httpparse.ParseTraceParent(x.Traceparent); ok {
		s.TraceID, s.ParentID, s.TraceFlags, s.ParentRemote = trace, parent, flags, true
		return true, k, false
	}
	k, linkable = cn.h2.link, cn.h2.linkable
	if !linkable {
		return false, k, false
	}
	if t := c.linkTable(cn.h2, x.End); t != nil && t.take(x.StreamID, s) {
		cn.h2.peer = t
		c.stats.H2Linked.Add(1)
		return true, k, true
	}
	return false, k, true
}

// take gives s the client span of stream as its parent, once.
func (t *h2linkTable) take(stream uint32, s *spans.Span) bool {
	ids, ok := t.ids[stream]
	if ok {
		delete(t.ids, stream)
		s.TraceID, s.ParentID, s.TraceFlags, s.ParentRemote = ids.trace, ids.span, ids.flags, true
	}
	return ok
}

// A server stream can end before the event of the client's write that
// opened it is read: the client's socket tracepoint fires after the bytes
// reached the server, which may answer meanwhile. Such a span waits, at
// most linkWait after its end and maxAwaiting at once, for that event.
const (
	linkWait    = 500 * time.Millisecond
	maxAwaiting = 4096
)

// h2streamKey names one stream of one connection on this host.
type h2streamKey struct {
	conn   h2linkKey
	stream uint32
}

// awaitLink holds ex, a finished server stream of connection k with no
// parent yet, for the client's event.
func (c *Correlator) awaitLink(k h2linkKey, stream uint32, ex *exchange) {
	if len(c.h2awaiting) >= maxAwaiting {
		c.newTrace(&ex.span)
		c.done(ex)
		return
	}
	if c.h2awaiting == nil {
		c.h2awaiting = map[h2streamKey]*exchange{}
	}
	c.h2awaiting[h2streamKey{k, stream}] = ex
}

// resolveLink ends the server span that waited for stream of t's
// connection, now that the client span is known, unless that span may
// be another connection's (t replaced a closed table of its key lately).
func (c *Correlator) resolveLink(t *h2linkTable, stream uint32) {
	sk := h2streamKey{t.key, stream}
	ex, ok := c.h2awaiting[sk]
	if !ok || (t.replacedAt != 0 && ex.lastTS < t.replacedAt+uint64(linkWait.Nanoseconds())) || !t.take(stream, &ex.span) {
		return
	}
	delete(c.h2awaiting, sk)
	c.stats.H2Linked.Add(1)
	c.done(ex)
}

// expireLinks ends the server spans that waited longer than linkWait
// (all of them when now is 0) in traces of their own, and drops the
// tables of client connections closed longer ago than that.
func (c *Correlator) expireLinks(now uint64) {
	wait := uint64(linkWait.Nanoseconds())
	for sk, ex := range c.h2awaiting {
		if now == 0 || now > ex.lastTS+wait {
			delete(c.h2awaiting, sk)
			c.newTrace(&ex.span)
			c.done(ex)
		}
	}
	for k, t := range c.h2links {
		if t.closedAt != 0 && (now == 0 || now > t.closedAt+wait) {
			delete(c.h2links, k)
		}
	}
}
