package correlate

import (
	"github.com/weftdev/weft/pkg/event"
)

// A grpc-go server stream whose HEADERS carry a traceparent gets its span
// ids from the kernel, which handed them to the stream's handler
// goroutine so that the handler's calls go under the span
// (bpf/include/h2serve.h). The kernel reports them (event.KindH2Serve)
// naming the goroutine that decoded the HEADERS, and the goroutine that
// created it: grpc-go reads each connection on a goroutine of its own,
// started by the connection's goroutine once that one read the first
// frames (and buffered what came with them). Every read names its
// goroutine, so the report goes to the stream of the connection that
// goroutine, or else its creator, reads.

type h2ReaderKey struct {
	pid       uint32
	goroutine uint64
}

// maxH2Served bounds the reported streams a connection keeps until they
// end (as many as it follows open).
const maxH2Served = 1024

// h2Reader notes that ev, a read of HTTP/2 connection cn, names the
// goroutine that reads it.
func (c *Correlator) h2Reader(cn *conn, ev *event.Event) {
	hc := cn.h2
	k := h2ReaderKey{ev.PID, ev.Goroutine}
	if ev.Goroutine == 0 || hc.reader == k {
		return
	}
	c.forgetH2Reader(cn)
	hc.reader = k
	if c.h2readers == nil {
		c.h2readers = map[h2ReaderKey]*conn{}
	}
	c.h2readers[k] = cn
}

// forgetH2Reader drops what cn's reader named, when it still names cn.
func (c *Correlator) forgetH2Reader(cn *conn) {
	hc := cn.h2
	if hc.reader != (h2ReaderKey{}) && c.h2readers[hc.reader] == cn {
		delete(c.h2readers, hc.reader)
	}
	hc.reader = h2ReaderKey{}
}

// h2Serve keeps the ids ev reports for its stream until the stream ends.
// A report no open stream of a followed connection takes is counted: the
// handler's calls then go under a span that is not exported.
func (c *Correlator) h2Serve(ev *event.Event) {
	cn := c.h2readers[h2ReaderKey{ev.PID, ev.Goroutine}]
	if cn == nil && ev.Creator != 0 {
		cn = c.h2readers[h2ReaderKey{ev.PID, ev.Creator}]
	}
	if cn == nil || cn.h2 == nil || cn.h2.lost || cn.h2.requests != event.Ingress ||
		!cn.h2.c.IsOpen(ev.H2Stream) || len(cn.h2.served) >= maxH2Served {
		c.stats.H2ServedUnmatched.Add(1)
		return
	}
	if cn.h2.served == nil {
		cn.h2.served = map[uint32]spanIDs{}
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
