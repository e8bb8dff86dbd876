package correlate

import (
	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/httpparse"
)

// lostEvents forgets what a connection had in flight when the kernel says
// the full ring buffer dropped some of its events. A response that
// follows cannot be paired with the requests seen before it (it may answer
// one whose events were lost), and HTTP/2's HPACK tables are out of step:
// a span made from them could carry another request's status or parent.
// What was in flight is counted (requests_lost_gap), not exported. HTTP/1
// is followed again from its next start line; an HTTP/2 connection is not
// followed further (the kernel cut its copy).
func (c *Correlator) lostEvents(cn *conn, ts uint64) {
	var lost uint64
	for _, q := range []*[]*exchange{&cn.server, &cn.client} {
		for _, ex := range *q {
			c.recycle(ex)
		}
		lost += uint64(len(*q))
		clear(*q)
		*q = (*q)[:0]
	}
	if cn.upgraded != nil {
		c.recycle(cn.upgraded)
		cn.upgraded = nil
		lost++
	}
	if hc := cn.h2; hc != nil {
		if hc.upgraded != nil {
			c.recycle(hc.upgraded)
			hc.upgraded = nil
			lost++
		}
		if !hc.lost {
			c.loseH2(cn, ts, errH2Gap)
		}
	} else if !cn.notHTTP {
		cn.in, cn.out = httpparse.NewParser(httpparse.ModeDetect), httpparse.NewParser(httpparse.ModeDetect)
		cn.in.StartMidStream()
		cn.out.StartMidStream()
		cn.inErrs, cn.outErrs = httpparse.ErrorCounts{}, httpparse.ErrorCounts{}
		cn.inHead, cn.outHead = false, false
		cn.inCtx, cn.outCtx = nil, nil
	}
	c.stats.LostInGap.Add(lost)
}

// DroppedAt tells the correlator when (kernel time, as event times) the
// kernel last dropped an event it could not deliver: the ring buffer was
// full. Called before the correlator ends requests that got no answer (at
// an exit, before each tick's timeouts).
func (c *Correlator) DroppedAt(ts uint64) { c.lastDrop = ts }

// lostSince reports, and counts, a request that got no answer and began
// before the kernel last dropped an event: its answer, or its
// connection's close, may be among the drops (a dropped close leaves its
// socket nothing to carry a gap), so a timeout or an error would be a
// guess. Its exchange is recycled. The order in which user space reads
// events does not matter: both times are the kernel's.
func (c *Correlator) lostSince(ex *exchange) bool {
	if c.lastDrop <= ex.startTS {
		return false
	}
	c.stats.LostInGap.Add(1)
	c.recycle(ex)
	return true
}

// gapOf is the bit of a close event's Gap that names conn id's stream.
func gapOf(closed *event.Event, id uint64) event.Gap {
	if id == closed.ConnID {
		return event.GapSocket
	}
	return event.GapTLS
}
