package correlate

import (
	"net/netip"

	"github.com/weftdev/weft/pkg/event"
)

// A process outside Go that opens HTTP/2 streams (over TLS, or h2c) to a
// server traced on this host gets its streams' spans decided in the
// kernel before each write leaves (under the request its thread claimed
// a stream for, else as roots), so that the server's hooks can take them
// as parent (bpf/include/h2seed.h). The kernel reports each (event.KindH2Open)
// before the write's data; the stream's client span takes those ids when
// the write opens it (openStreams).

// h2Opened is one such decision, waiting for its write.
type h2Opened struct {
	ids           spanIDs
	pid           uint32
	local, remote netip.AddrPort
	at            uint64 // when it was reported
}

// maxH2Opened bounds the decisions waiting for their write.
const maxH2Opened = 16384

// h2Open keeps the decision ev reports until its stream opens. A second
// one for a stream (a write retried after its first part left) is
// counted and dropped: the server end may have taken the first.
func (c *Correlator) h2Open(ev *event.Event) {
	if c.h2openedN >= maxH2Opened {
		c.stats.H2OpenedUnmatched.Add(1)
		return
	}
	byStream := c.h2opened[ev.ConnID]
	if _, twice := byStream[ev.H2Stream]; twice {
		c.stats.H2OpenedUnmatched.Add(1)
		return
	}
	if byStream == nil {
		if c.h2opened == nil {
			c.h2opened = map[uint64]map[uint32]h2Opened{}
		}
		byStream = map[uint32]h2Opened{}
		c.h2opened[ev.ConnID] = byStream
	}
	byStream[ev.H2Stream] = h2Opened{
		ids:    spanIDs{trace: ev.TraceID, span: ev.SpanID, parent: ev.ParentID, flags: ev.TraceFlags},
		pid:    ev.PID,
		local:  ev.Local,
		remote: ev.Remote,
		at:     ev.Time,
	}
	c.h2openedN++
}

// takeH2Opened removes the decision left for stream of the connection
// that write ev is on; ok when there was one for that connection (same
// process and addresses, so never one of an earlier socket at its
// address).
func (c *Correlator) takeH2Opened(ev *event.Event, stream uint32) (ids spanIDs, ok bool) {
	byStream := c.h2opened[ev.ConnID]
	o, found := byStream[stream]
	if !found {
		return spanIDs{}, false
	}
	c.forgetH2Opened(ev.ConnID, byStream, stream)
	if o.pid != ev.PID || o.local != ev.Local || o.remote != ev.Remote {
		c.stats.H2OpenedUnmatched.Add(1)
		return spanIDs{}, false
	}
	return o.ids, true
}

func (c *Correlator) forgetH2Opened(conn uint64, byStream map[uint32]h2Opened, stream uint32) {
	delete(byStream, stream)
	c.h2openedN--
	if len(byStream) == 0 {
		delete(c.h2opened, conn)
	}
}

// closeH2Opened counts and forgets what a closed connection left: its
// socket's address may name the next connection.
func (c *Correlator) closeH2Opened(conn uint64) {
	if n := len(c.h2opened[conn]); n > 0 {
		c.stats.H2OpenedUnmatched.Add(uint64(n))
		c.h2openedN -= n
		delete(c.h2opened, conn)
	}
}

// expireH2Opened counts and forgets the decisions whose write never came.
func (c *Correlator) expireH2Opened(now uint64) {
	ttl := uint64(h2ClaimTTL.Nanoseconds())
	for conn, byStream := range c.h2opened {
		for stream, o := range byStream {
			if now > o.at+ttl {
				c.forgetH2Opened(conn, byStream, stream)
				c.stats.H2OpenedUnmatched.Add(1)
			}
		}
	}
}
