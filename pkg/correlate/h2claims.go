package correlate

import (
	"time"

	"github.com/weftdev/weft/pkg/event"
)

// grpc-go writes every stream's HEADERS on its connection's loopy-writer
// goroutine, several streams in one write. The kernel reports each
// stream's request before that write (event.KindH2Claim), naming the
// loopy goroutine; the write carries the same goroutine id, and each
// stream it opens takes its claim (openStreams). A claim carries the
// stream's span id when the kernel decided it, for a server end on this
// host (bpf/include/h2link.h).

type h2ClaimKey struct {
	pid       uint32
	goroutine uint64
	stream    uint32
}

type h2Claim struct {
	ids spanIDs // trace, parent and flags
	at  uint64  // when it was reported
	// twice: a second claim came for the same writer and stream before a
	// write took the first (a JVM thread writing two connections' streams
	// of one id): which is whose cannot be told, so neither is used.
	twice bool
}

const (
	// maxH2Claims bounds the claims waiting for their write.
	maxH2Claims = 16384
	// h2ClaimTTL: a claim whose write has not come by then never will
	// (its connection broke before the loopy wrote the stream).
	h2ClaimTTL = 10 * time.Second
)

// h2Claim keeps the claim ev reports until the write that opens its
// stream, or counts it unmatched when too many wait.
func (c *Correlator) h2Claim(ev *event.Event) {
	if len(c.h2claims) >= maxH2Claims {
		c.stats.H2ClaimsUnmatched.Add(1)
		return
	}
	if c.h2claims == nil {
		c.h2claims = map[h2ClaimKey]h2Claim{}
	}
	k := h2ClaimKey{ev.PID, ev.Goroutine, ev.H2Stream}
	_, twice := c.h2claims[k]
	if twice {
		c.stats.H2ClaimsUnmatched.Add(1)
	}
	c.h2claims[k] = h2Claim{
		ids:   spanIDs{trace: ev.TraceID, span: ev.SpanID, parent: ev.ParentID, flags: ev.TraceFlags},
		at:    ev.Time,
		twice: twice,
	}
}

// takeH2Claim removes and returns the claim of stream, which write ev
// opened, if its goroutine left one.
func (c *Correlator) takeH2Claim(ev *event.Event, stream uint32) (spanIDs, bool) {
	if ev.Goroutine == 0 || len(c.h2claims) == 0 {
		return spanIDs{}, false
	}
	k := h2ClaimKey{ev.PID, ev.Goroutine, stream}
	cl, ok := c.h2claims[k]
	if ok {
		delete(c.h2claims, k)
	}
	return cl.ids, ok && !cl.twice
}

// expireH2Claims counts and forgets the claims whose write never came.
func (c *Correlator) expireH2Claims(now uint64) {
	ttl := uint64(h2ClaimTTL.Nanoseconds())
	for k, cl := range c.h2claims {
		if now > cl.at+ttl {
			delete(c.h2claims, k)
			c.stats.H2ClaimsUnmatched.Add(1)
		}
	}
}
