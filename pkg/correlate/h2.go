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
}

var (
	errH2Cut    = errors.New("h2: the kernel's copy lost the framing")
	errH2Prefix = errors.New("h2: the kernel stopped walking the frames (its state was lost)")
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
	c.stats.H2Conns.Add(1)
}

// closeH2 counts the streams a closed connection left open; an upgrade
// request whose stream 1 never ended ends as incomplete.
func (c *Correlator) closeH2(cn *conn, ts uint64) {
	hc := cn.h2
	if !hc.lost {
		c.stats.H2StreamsLost.Add(uint64(hc.c.Open()))
	}
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
		} else {
			done = hc.c.FeedResponse(ev.Payload, len(ev.Payload), ev.Time)
		}
	}
	for i := range done {
		c.h2span(cn, &done[i])
	}
	if err := hc.c.Lost(); err != nil {
		// Streams still open are not followed further: counted, no span
		// (the times and status it would have would be guesses).
		hc.lost = true
		c.stats.H2Lost.Add(1)
		c.stats.H2StreamsLost.Add(uint64(hc.c.Open()))
		c.log.Debug("HTTP/2 connection no longer followed", "conn", cn.id, "pid", cn.pid, "reason", err)
		if c.opts.NotHTTP != nil {
			c.opts.NotHTTP(cn.id, cn.local.Port(), cn.remote.Port()) // nothing more to copy
		}
	}
}

// h2span turns a finished stream into its span. A server span joins the
// trace of the stream's traceparent, if any; a client span, the trace of
// a traceparent the application sent, else a trace of its own: which
// request of the process sent the stream is not known here.
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
			SpanID:           c.ids.spanID(),
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
	if trace, parent, flags, ok := httpparse.ParseTraceParent(x.Traceparent); ok {
		ex.span.TraceID, ex.span.ParentID, ex.span.TraceFlags = trace, parent, flags
		ex.span.ParentRemote = kind == spans.KindServer
	} else {
		ex.span.TraceID = c.ids.traceID()
		ex.span.TraceFlags = c.opts.Sampler.Flags(ex.span.TraceID)
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
	c.done(ex)
}

// opensPreface reports whether a copy starts with the client preface, or
// is the start of it (servers may read it in pieces).
func opensPreface(b []byte) bool {
	n := min(len(b), len(h2.ClientPreface))
	return n > 0 && string(b[:n]) == h2.ClientPreface[:n]
}
