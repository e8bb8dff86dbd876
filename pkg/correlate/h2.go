package correlate

import (
	"errors"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/httpparse"
	"github.com/weftdev/weft/pkg/httpparse/h2"
	"github.com/weftdev/weft/pkg/spans"
)

// h2conn follows a connection the kernel saw open with the HTTP/2 client
// preface: one span per stream, with ids decided here (the kernel assigns
// none to HTTP/2 streams).
type h2conn struct {
	c *h2.Conn
	// requests is the direction the client's frames flow in: Ingress on
	// the server's end of the connection, Egress on the client's.
	requests event.Direction
	lost     bool
	// upgraded is the HTTP/1.1 request whose Upgrade: h2c opened the
	// connection's HTTP/2: stream 1 answers it.
	upgraded *exchange
	// streams are the ids of the client spans of open streams, decided
	// when the write that opened each was seen (openStreams).
	streams map[uint32]spanIDs
	// link names the connection for linking its ends on this host (as
	// its client sees it; h2link.go), decided once: linkable when it can.
	link     h2linkKey
	linkable bool
	// links is the table through which a client connection's streams
	// parent the server spans of the same connection's other end, when
	// weft traces both (h2link.go); nil when it cannot be keyed.
	links *h2linkTable
	// peer is the client table a server connection's streams linked to
	// first: the same connection's other end, kept after its close.
	peer *h2linkTable
	// reader is the goroutine the connection's reads name, creator the
	// goroutine that created it, fresh whether they are marked as
	// decoding a connection whose client is not followed here, and served
	// the ids the kernel decided for its server streams (h2serve.go).
	reader, creator h2ReaderKey
	fresh           bool
	served          map[uint32]spanIDs
}

var (
	errH2Cut    = errors.New("h2: the kernel's copy lost the framing")
	errH2Prefix = errors.New("h2: the kernel stopped walking the frames (its state was lost)")
	errH2Gap    = errors.New("h2: the full ring buffer dropped events of the connection")
)

// startH2 follows cn as HTTP/2 from ev, the first event the kernel copied
// as frames: the one with the preface, or (when the other direction's
// call ended first) one from the server's side.
func (c *Correlator) startH2(cn *conn, ev *event.Event) {
	requests := ev.Dir
	if !opensPreface(ev.Payload) {
		requests = 1 - ev.Dir
	}
	// Whatever the HTTP/1 parsers made of the bytes before the preface
	// (a server's SETTINGS, written first) is no request.
	cn.in, cn.out, cn.notHTTP = nil, nil, false
	cn.h2 = &h2conn{c: h2.NewFramesConn(), requests: requests}
	if ex := cn.upgraded; ex != nil && requestDir(ex) == requests {
		cn.upgraded, cn.h2.upgraded = nil, ex
		cn.h2.c.Adopt(1, ex.startTS)
	}
	if requests == event.Egress {
		cn.h2.link, cn.h2.linkable = c.linkKey(cn, cn.local, cn.remote)
		c.linkClient(cn.h2, ev.Time)
	} else {
		cn.h2.link, cn.h2.linkable = c.linkKey(cn, cn.remote, cn.local)
	}
	c.stats.H2Conns.Add(1)
}

// closeH2 counts the streams a closed connection left open; an upgrade
// request whose stream 1 never ended ends as incomplete.
func (c *Correlator) closeH2(cn *conn, ts uint64) {
	hc := cn.h2
	if !hc.lost {
		c.stats.H2StreamsLost.Add(uint64(hc.c.Open()))
	}
	c.unlinkClient(hc, ts)
	c.forgetH2Reader(cn)
	hc.served = nil
	if ex := hc.upgraded; ex != nil {
		hc.upgraded = nil
		ex.span.ErrorType = "response_incomplete"
		ex.endAt(ts)
		c.done(ex)
	}
}

func (c *Correlator) h2data(cn *conn, ev *event.Event) {
	hc := cn.h2
	if hc.lost {
		return
	}
	switch ev.Capture {
	case event.CaptureH2Cut:
		hc.c.Lose(errH2Cut)
	case event.CapturePrefix:
		hc.c.Lose(errH2Prefix)
	}
	var done []h2.Exchange
	if hc.c.Lost() == nil {
		if ev.Dir == hc.requests {
			done = hc.c.FeedRequest(ev.Payload, len(ev.Payload), ev.Time)
			if hc.requests == event.Egress {
				c.openStreams(hc, ev)
			} else {
				c.h2Reader(cn, ev)
			}
		} else {
			done = hc.c.FeedResponse(ev.Payload, len(ev.Payload), ev.Time)
		}
	}
	for i := range done {
		c.h2span(cn, &done[i])
	}
	if err := hc.c.Lost(); err != nil {
		c.loseH2(cn, ev.Time, err)
	}
}

// loseH2 stops following an HTTP/2 connection whose framing or HPACK
// state is lost. Streams still open are not followed further: counted, no
// span (the times and status they would have would be guesses).
func (c *Correlator) loseH2(cn *conn, ts uint64, why error) {
	hc := cn.h2
	hc.lost = true
	c.unlinkClient(hc, ts)
	c.forgetH2Reader(cn)
	hc.streams, hc.served = nil, nil
	c.stats.H2Lost.Add(1)
	c.stats.H2StreamsLost.Add(uint64(hc.c.Open()))
	c.log.Debug("HTTP/2 connection no longer followed", "conn", cn.id, "pid", cn.pid, "reason", why)
	if c.opts.NotHTTP != nil {
		c.opts.NotHTTP(cn.id, cn.local.Port(), cn.remote.Port()) // nothing more to copy
	}
}

// openStreams decides the client spans of the streams a write opened:
// under the traceparent the application sent, else with the ids the
// kernel decided as the write began (h2open.go), else under the request
// the kernel says the write was made for (CtxH2Stream, or a claim its
// goroutine left for the stream: h2claims.go), with the span id the
// kernel decided for a server end on this host if it did, else in a
// trace of their own. The ids are decided now, not when the stream ends,
// so that the server's end of the connection can take them (h2link.go).
func (c *Correlator) openStreams(hc *h2conn, ev *event.Event) {
	claimed := ev.Ctx == event.CtxH2Stream
	for _, x := range hc.c.Opened() {
		ids := spanIDs{span: c.ids.spanID()}
		mine := claimed && x.StreamID == ev.H2Stream
		if mine {
			claimed = false
		}
		left, isLeft := c.takeH2Claim(ev, x.StreamID)
		opened, isOpened := c.takeH2Opened(ev, x.StreamID)
		if trace, parent, flags, ok := httpparse.ParseTraceParent(x.Traceparent); ok {
			// The server end takes this traceparent, not a span the
			// kernel may have decided.
			ids.trace, ids.parent, ids.flags = trace, parent, flags
		} else if isOpened {
			ids = opened
			c.stats.H2Opened.Add(1)
		} else if mine {
			ids.trace, ids.parent, ids.flags = ev.TraceID, ev.ParentID, ev.TraceFlags
			if ev.SpanID != ([8]byte{}) {
				ids.span = ev.SpanID
			}
		} else if isLeft && left.trace != (spans.TraceID{}) {
			ids.trace, ids.parent, ids.flags = left.trace, left.parent, left.flags
			if left.span.IsValid() {
				ids.span = left.span
			}
		} else { // no claim, or one that names no request
			ids.trace = c.ids.traceID()
			ids.flags = c.opts.Sampler.Flags(ids.trace)
		}
		if hc.streams == nil {
			hc.streams = map[uint32]spanIDs{}
		}
		hc.streams[x.StreamID] = ids
		if hc.links != nil {
			hc.links.ids[x.StreamID] = ids
			c.resolveLink(hc.links, x.StreamID)
		}
	}
	if claimed {
		// Its goroutine's HEADERS went out in pieces, say: the stream
		// they opened is in a trace of its own.
		c.stats.H2ClaimsUnmatched.Add(1)
	}
}

// h2span turns a finished stream into its span. A client span has the
// ids openStreams gave it. A server span has the ids the kernel gave its
// handler (h2serve.go), else joins the trace of the stream's traceparent,
// else, when weft traces the client on this host, the client span's
// (h2link.go), else a trace of its own.
func (c *Correlator) h2span(cn *conn, x *h2.Exchange) {
	if ex := cn.h2.upgraded; ex != nil && x.StreamID == 1 {
		// The upgrade request's span, with the ids the kernel gave it,
		// ends with stream 1's answer.
		cn.h2.upgraded = nil
		ex.span.StatusCode, ex.span.ResponseBodySize = x.Status, int64(x.ResponseBytes)
		if x.Reset {
			ex.span.ErrorType = "stream_reset"
		}
		ex.endAt(x.End)
		c.done(ex)
		return
	}
	kind := spans.KindClient
	if cn.h2.requests == event.Ingress {
		kind = spans.KindServer
	}
	ex := c.spareExchange()
	*ex = exchange{
		startTS: x.Start,
		lastTS:  x.End,
		target:  x.Path,
		span: spans.Span{
			Kind:             kind,
			Start:            c.opts.Clock.Wall(x.Start),
			PID:              cn.pid,
			Method:           x.Method,
			Host:             x.Authority,
			UserAgent:        x.UserAgent,
			Proto:            "2",
			TLS:              cn.tls,
			StatusCode:       x.Status,
			Local:            cn.local,
			Remote:           cn.remote,
			RequestBodySize:  int64(x.RequestBytes),
			ResponseBodySize: int64(x.ResponseBytes),
			RPCStatus:        -1,
		},
	}
	ids, opened := cn.h2.streams[x.StreamID]
	var await *h2linkKey
	switch {
	case kind == spans.KindClient && opened:
		delete(cn.h2.streams, x.StreamID)
		cn.h2.links.end(x.StreamID)
		ex.span.TraceID, ex.span.SpanID, ex.span.ParentID, ex.span.TraceFlags = ids.trace, ids.span, ids.parent, ids.flags
	case kind == spans.KindServer && takeH2Served(cn.h2, x.StreamID, &ids):
		ex.span.TraceID, ex.span.SpanID, ex.span.ParentID, ex.span.TraceFlags = ids.trace, ids.span, ids.parent, ids.flags
		ex.span.ParentRemote = ids.parent.IsValid()
	case kind == spans.KindServer:
		ex.span.SpanID = c.ids.spanID()
		if linked, k, linkable := c.serverParent(cn, x, &ex.span); !linked && linkable {
			await = &k
		} else if !linked {
			c.newTrace(&ex.span)
		}
	default:
		ex.span.SpanID = c.ids.spanID()
		c.newTrace(&ex.span)
	}
	if x.IsGRPC() {
		ex.span.RPCSystem = "grpc"
		ex.span.RPCService, ex.span.RPCMethod, _ = x.GRPCMethod()
		ex.span.RPCStatus, ex.span.RPCMessage = x.GRPCStatus, x.GRPCMessage
	}
	if x.Reset { // before the stream ended: the exchange did not complete
		ex.span.ErrorType = "stream_reset"
	}
	ex.endAt(x.End)
	if await != nil {
		c.awaitLink(*await, x.StreamID, ex)
		return
	}
	c.done(ex)
}

// newTrace makes s the root of a trace of its own.
func (c *Correlator) newTrace(s *spans.Span) {
	s.TraceID = c.ids.traceID()
	s.TraceFlags = c.opts.Sampler.Flags(s.TraceID)
}

// opensPreface reports whether a copy starts with the client preface, or
// is the start of it (servers may read it in pieces).
func opensPreface(b []byte) bool {
	n := min(len(b), len(h2.ClientPreface))
	return n > 0 && string(b[:n]) == h2.ClientPreface[:n]
}
