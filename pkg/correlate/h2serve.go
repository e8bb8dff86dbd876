package correlate

import (
	"slices"

	"github.com/weftdev/weft/pkg/event"
)

// A Go HTTP/2 server stream whose HEADERS carry a traceparent gets its
// span ids from the kernel, which handed them to the stream's handler
// goroutine so that the handler's calls go under the span
// (bpf/include/h2serve.h). The kernel reports them (event.KindH2Serve)
// naming the goroutine that decoded the HEADERS, and the goroutine that
// created it. Every read names its goroutine and that goroutine's
// creator, so the report goes to the stream of the connection that
// goroutine reads (grpc-go's reader), or that a goroutine it created
// reads (net/http's serve goroutine starts the readers), or else that its
// creator read (grpc-go's connection goroutine reads the first frames,
// and buffers what came with them, before it starts the reader).
//
// A stream without traceparent gets its ids from the kernel too when its
// client on this host is a Go program, which decided its span for it
// (bpf/include/h2link.h: the report then has kind CtxH2Stream), or when
// its connection's client is not followed on this host (no client span can
// be its parent, h2link.go): once user space has seen a read of such a
// connection, it marks the reading goroutine, and the goroutine that
// created it while that one created no other connection's reader, fresh
// (Options.H2Fresh), and the kernel starts a trace for each stream those
// goroutines decode. Streams decoded before (a connection's first ones)
// start their trace in user space, and their handler's calls theirs. A
// client's first write can be read after the server's read of it (both
// events are reserved once the bytes moved): when a client connection
// with the same addresses appears, its server end's marks go, and its
// later streams link to their client spans again.
//
// nginx decides an HTTP/2 stream's span where it calls upstream
// (bpf/include/nginx.h): its report names the connection and stream
// instead of a goroutine.

type h2ReaderKey struct {
	pid       uint32
	goroutine uint64
}

// maxH2Served bounds the reported streams a connection keeps until they
// end (as many as it follows open).
const maxH2Served = 1024

// h2Reader notes that ev, a read of HTTP/2 connection cn, names the
// goroutine that reads it and that goroutine's creator. When the reader
// changes, the new marks are set before the old ones are taken back:
// net/http's serve goroutine reads the client preface over h2c and then
// creates the goroutine that reads on, so it is marked as reader first
// and as creator after, and the kernel may decide a stream it decodes in
// between (a gap left such a stream, and its handler's calls, without
// the trace the kernel starts).
func (c *Correlator) h2Reader(cn *conn, ev *event.Event) {
	hc := cn.h2
	k := h2ReaderKey{ev.PID, ev.Goroutine}
	if ev.Goroutine == 0 || hc.reader == k {
		return
	}
	stale := c.freshMarks(cn)
	hc.fresh = false // its marks go below, those set again excepted
	c.forgetH2Reader(cn)
	defer c.unmarkStale(cn, stale)
	hc.reader = k
	if c.h2readers == nil {
		c.h2readers = map[h2ReaderKey]*conn{}
	}
	c.h2readers[k] = cn
	hc.fresh = c.opts.H2Fresh != nil && (!hc.linkable || c.h2links[hc.link] == nil)
	if hc.fresh {
		c.opts.H2Fresh(k.pid, k.goroutine, true)
	}
	switch {
	case hc.fresh && hc.linkable:
		if c.h2fresh == nil {
			c.h2fresh = map[h2linkKey]*conn{}
		}
		c.h2fresh[hc.link] = cn
	case c.h2fresh[hc.link] == cn:
		delete(c.h2fresh, hc.link)
	}
	if ev.Creator == 0 {
		return
	}
	hc.creator = h2ReaderKey{ev.PID, ev.Creator}
	if c.h2creators == nil {
		c.h2creators = map[h2ReaderKey]map[*conn]struct{}{}
	}
	conns := c.h2creators[hc.creator]
	if conns == nil {
		conns = map[*conn]struct{}{}
		c.h2creators[hc.creator] = conns
	}
	conns[cn] = struct{}{}
	switch {
	case len(conns) > 1 && c.opts.H2Fresh != nil: // it names no one connection
		c.opts.H2Fresh(hc.creator.pid, hc.creator.goroutine, false)
	case hc.fresh:
		c.opts.H2Fresh(hc.creator.pid, hc.creator.goroutine, true)
	}
}

// freshMarks are the goroutines cn has marked fresh: its reader and the
// reader's creator.
func (c *Correlator) freshMarks(cn *conn) []h2ReaderKey {
	hc := cn.h2
	if !hc.fresh {
		return nil
	}
	marks := []h2ReaderKey{hc.reader}
	if hc.creator != (h2ReaderKey{}) {
		marks = append(marks, hc.creator)
	}
	return marks
}

// unmarkStale takes back the marks of stale that cn no longer sets.
func (c *Correlator) unmarkStale(cn *conn, stale []h2ReaderKey) {
	now := c.freshMarks(cn)
	for _, g := range stale {
		if !slices.Contains(now, g) {
			c.opts.H2Fresh(g.pid, g.goroutine, false)
		}
	}
}

// forgetH2Reader drops what cn's reader named, when it still names cn.
func (c *Correlator) forgetH2Reader(cn *conn) {
	hc := cn.h2
	if hc.reader != (h2ReaderKey{}) && c.h2readers[hc.reader] == cn {
		delete(c.h2readers, hc.reader)
	}
	c.unmarkFresh(cn)
	hc.reader = h2ReaderKey{}
	if conns := c.h2creators[hc.creator]; conns != nil {
		if delete(conns, cn); len(conns) == 0 {
			delete(c.h2creators, hc.creator)
		}
	}
	hc.creator = h2ReaderKey{}
}

// unmarkFresh takes cn's marks back, if it has any.
func (c *Correlator) unmarkFresh(cn *conn) {
	hc := cn.h2
	if !hc.fresh {
		return
	}
	for _, g := range c.freshMarks(cn) {
		c.opts.H2Fresh(g.pid, g.goroutine, false)
	}
	if c.h2fresh[hc.link] == cn {
		delete(c.h2fresh, hc.link)
	}
	hc.fresh = false
}

// h2Served is the connection whose stream a report of goroutine g of
// process pid, created by creator, is for. A goroutine that created the
// readers of more than one connection followed names none of them: which
// the report is for cannot be told.
func (c *Correlator) h2Served(pid uint32, g, creator uint64) *conn {
	if cn := c.h2readers[h2ReaderKey{pid, g}]; cn != nil {
		return cn
	}
	if conns := c.h2creators[h2ReaderKey{pid, g}]; len(conns) == 1 {
		for cn := range conns {
			return cn
		}
	}
	if creator != 0 {
		return c.h2readers[h2ReaderKey{pid, creator}]
	}
	return nil
}

// h2Serve keeps the ids ev reports for its stream until the stream ends.
// A report no open stream of a followed connection takes is counted: the
// handler's calls then go under a span that is not exported.
func (c *Correlator) h2Serve(ev *event.Event) {
	var cn *conn
	if ev.Goroutine == 0 { // it names the connection
		if cn, _ = c.conns.Peek(ev.ConnID); cn != nil && cn.pid != ev.PID {
			cn = nil
		}
	} else {
		cn = c.h2Served(ev.PID, ev.Goroutine, ev.Creator)
	}
	if cn == nil || cn.h2 == nil || cn.h2.lost || cn.h2.requests != event.Ingress ||
		!cn.h2.c.IsOpen(ev.H2Stream) || len(cn.h2.served) >= maxH2Served {
		c.stats.H2ServedUnmatched.Add(1)
		return
	}
	if _, twice := cn.h2.served[ev.H2Stream]; twice {
		// A second decision for one stream (nginx calling upstream
		// again after an internal redirect): the first names the span,
		// the calls made under the second go under one not exported.
		c.stats.H2ServedUnmatched.Add(1)
		return
	}
	if cn.h2.served == nil {
		cn.h2.served = map[uint32]spanIDs{}
	}
	switch {
	case ev.ParentID == ([8]byte{}):
		c.stats.H2ServedNew.Add(1)
	case ev.Ctx == event.CtxH2Stream: // under its client's span
		c.stats.H2ServedLinked.Add(1)
		c.stats.H2Linked.Add(1)
	}
	cn.h2.served[ev.H2Stream] = spanIDs{trace: ev.TraceID, span: ev.SpanID, parent: ev.ParentID, flags: ev.TraceFlags}
}

// takeH2Served moves to out the ids the kernel reported for server
// stream id of hc, if it did.
func takeH2Served(hc *h2conn, id uint32, out *spanIDs) bool {
	ids, ok := hc.served[id]
	if ok {
		delete(hc.served, id)
		*out = ids
	}
	return ok
}
