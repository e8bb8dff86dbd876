// Package correlate turns the kernel's per-call byte captures into spans:
// it pairs HTTP requests with their responses on each connection, times
// them with the kernel's clock, and parents a client request on the server
// request its thread (its correlation key) is serving.
package correlate

import (
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/httpparse"
	"github.com/weftdev/weft/pkg/sampling"
	"github.com/weftdev/weft/pkg/spans"
)

// Options tune the correlator.
type Options struct {
	// RequestTimeout ends requests that got no answer.
	RequestTimeout time.Duration
	// IdleTimeout forgets connections with nothing in flight.
	IdleTimeout time.Duration
	// MaxConns bounds the connections tracked; the least recently used
	// is dropped first.
	MaxConns int
	// MaxPipelined bounds the requests awaiting answers on one connection.
	MaxPipelined int
	KeepQuery    bool
	Clock        *Clock
	// Sampler decides for the spans the kernel gave no ids (it decides
	// for all others); nil: OpenTelemetry's default.
	Sampler *sampling.Sampler
	// Router names routes; nil: Route's heuristics alone.
	Router *Router
	// Observe, when set, sees every finished span, sampled or not (span
	// metrics count every request), before emit sees the sampled ones.
	// It must not keep the pointer.
	Observe func(*spans.Span)
	// NotHTTP, when set, hears of each connection found to carry another
	// protocol, with its local and remote ports (which tell it from a
	// later socket at the same address).
	NotHTTP func(connID uint64, local, remote uint16)
	// NetNS, when set, gives a process's network namespace (an inode),
	// false when unknown: loopback HTTP/2 connections are linked end to
	// end only within one (h2link.go). Called once per such connection.
	NetNS func(pid uint32) (uint64, bool)
	// H2Fresh, when set, tells the kernel whether goroutine goroutine of
	// process pid reads, or created the reader of, an HTTP/2 server
	// connection whose client weft does not follow on this host: the
	// kernel then starts a trace for each of its streams without
	// traceparent, for the stream's handler (h2serve.go).
	H2Fresh func(pid uint32, goroutine uint64, fresh bool)
}

func (o *Options) defaults() {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 2 * time.Minute
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 10 * time.Minute
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 65536
	}
	if o.MaxPipelined <= 0 {
		o.MaxPipelined = 64
	}
	if o.Clock == nil {
		o.Clock = NewClock()
	}
	if o.Sampler == nil {
		s := sampling.Default()
		o.Sampler = &s
	}
}

// Stats count what the correlator saw. Safe to read from any goroutine.
type Stats struct {
	Events        atomic.Uint64
	ServerSpans   atomic.Uint64
	ClientSpans   atomic.Uint64
	ClientRoots   atomic.Uint64 // client spans that started a trace: no request of the sender's was known
	ParseErrors   atomic.Uint64 // messages the parser could not make sense of
	NotHTTP       atomic.Uint64 // connections recognised as another protocol
	Timeouts      atomic.Uint64 // requests ended by RequestTimeout
	Unanswered    atomic.Uint64 // requests pending when their connection closed
	Unmatched     atomic.Uint64 // responses with no request (capture began mid-exchange)
	Overflow      atomic.Uint64 // requests dropped: too many pipelined
	EvictedConns  atomic.Uint64 // connections dropped by the MaxConns bound
	NoKernelCtx   atomic.Uint64 // spans the kernel assigned no ids to: traces of their own
	Unsampled     atomic.Uint64 // spans of traces the sampler left out: counted, not exported
	H2Conns       atomic.Uint64 // connections followed as HTTP/2
	H2Lost        atomic.Uint64 // HTTP/2 connections no longer followed (framing or HPACK state lost)
	H2StreamsLost atomic.Uint64 // streams open on those: no span
	// LostInGap: requests the full ring buffer left without a knowable
	// end, so without a span: in flight on a connection that lost events
	// or whose close was dropped, or unanswered but begun before the
	// kernel last dropped an event (gap.go).
	LostInGap atomic.Uint64
	// H2ClaimsUnmatched: writes that carried a client stream's parent but
	// did not open that stream, and claims of a stream whose write never
	// came (or found the claims table full): such a stream starts a trace
	// of its own.
	H2ClaimsUnmatched atomic.Uint64
	// H2Linked: server streams parented by the client span of the same
	// connection's other end on this host (h2link.go).
	H2Linked atomic.Uint64
	// H2ServedUnmatched: server streams the kernel gave ids (and their
	// handler) that no followed stream took (h2serve.go).
	H2ServedUnmatched atomic.Uint64
	// H2ServedNew: server streams without traceparent that the kernel
	// gave a new trace (and their handler), on connections whose client
	// weft does not follow on this host (h2serve.go).
	H2ServedNew atomic.Uint64
	// H2ServedLinked: server streams that the kernel put (with their
	// handler) under their client span of this host, which it decided
	// for them (bpf/include/h2link.h); H2Linked counts them too.
	H2ServedLinked atomic.Uint64
	// H2Opened: client streams whose span the kernel decided, as they
	// opened, for their server end on this host (h2open.go).
	H2Opened atomic.Uint64
	// H2OpenedUnmatched: such decisions no stream took (its write
	// failed, its connection closed first, or the table was full).
	H2OpenedUnmatched atomic.Uint64

	mu     sync.Mutex
	byKind httpparse.ErrorCounts // parse errors by reason
}

// Snapshot returns the counters by name for self-metrics.
func (s *Stats) Snapshot() map[string]uint64 {
	out := map[string]uint64{
		"correlate_events":           s.Events.Load(),
		"spans_server":               s.ServerSpans.Load(),
		"spans_client":               s.ClientSpans.Load(),
		"spans_client_root":          s.ClientRoots.Load(),
		"parse_errors":               s.ParseErrors.Load(),
		"conns_not_http":             s.NotHTTP.Load(),
		"requests_timed_out":         s.Timeouts.Load(),
		"requests_unanswered":        s.Unanswered.Load(),
		"responses_unmatched":        s.Unmatched.Load(),
		"requests_pipeline_overflow": s.Overflow.Load(),
		"conns_evicted":              s.EvictedConns.Load(),
		"spans_without_kernel_ids":   s.NoKernelCtx.Load(),
		"spans_unsampled":            s.Unsampled.Load(),
		"h2_conns":                   s.H2Conns.Load(),
		"h2_conns_lost":              s.H2Lost.Load(),
		"h2_streams_lost":            s.H2StreamsLost.Load(),
		"requests_lost_gap":          s.LostInGap.Load(),
		"h2_parents_unmatched":       s.H2ClaimsUnmatched.Load(),
		"h2_streams_linked":          s.H2Linked.Load(),
		"h2_served_unmatched":        s.H2ServedUnmatched.Load(),
		"h2_served_new":              s.H2ServedNew.Load(),
		"h2_served_linked":           s.H2ServedLinked.Load(),
		"h2_opened":                  s.H2Opened.Load(),
		"h2_opened_unmatched":        s.H2OpenedUnmatched.Load(),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, n := range s.byKind {
		if n > 0 {
			out["parse_errors_"+httpparse.Error(i).String()] = n
		}
	}
	return out
}

// exchange is one request waiting for its response.
type exchange struct {
	span    spans.Span
	target  string // the request target, for describe
	h2c     bool   // the request asked to upgrade to HTTP/2 (Upgrade: h2c)
	startTS uint64 // kernel (monotonic) time of Span.Start
	lastTS  uint64
}

// endAt ends the span at kernel time ts: its duration is the difference of
// the two kernel timestamps, whatever the wall clock offset did meanwhile.
func (ex *exchange) endAt(ts uint64) {
	if ts <= ex.startTS {
		ex.span.End = ex.span.Start
		return
	}
	ex.span.End = ex.span.Start.Add(time.Duration(ts - ex.startTS))
}

type conn struct {
	id      uint64
	pid     uint32
	local   netip.AddrPort
	remote  netip.AddrPort
	tls     bool // the plaintext of a TLS connection
	in, out *httpparse.Parser
	// server: requests received, answered by responses sent.
	// client: requests sent, answered by responses received.
	server, client []*exchange
	lastTS         uint64
	notHTTP        bool
	// inHead/outHead: a request head was reported (PhaseHead) and its
	// terminal event is still to come, so that event starts nothing.
	inHead, outHead bool
	// quiet counts segments that produced no message; a connection that
	// never shows one is another protocol (see maxQuietSegments).
	quiet    int
	messages bool
	// parse errors already counted, per parser
	inErrs, outErrs httpparse.ErrorCounts
	// Span ids the kernel assigned to the request starting in the last
	// segment of each direction, for the next request heads parsed there.
	inCtx, outCtx []spanIDs
	// endedBy is the side that closed the connection first, once known.
	endedBy ender
	// h2 follows the connection once the kernel saw it open as HTTP/2.
	h2 *h2conn
	// upgraded is a request answered 101 to its Upgrade: h2c: its answer
	// comes as HTTP/2 stream 1, once the preface shows the switch.
	upgraded *exchange
}

// spanIDs are a span's ids decided before it ends: by the kernel (and,
// for client requests, possibly written on the wire), or, for an HTTP/2
// client stream, in user space when the stream opened.
type spanIDs struct {
	trace  spans.TraceID
	span   spans.SpanID
	parent spans.SpanID
	flags  byte
}

// ctxOf lists the spans the kernel assigned to the requests an event
// starts: the first, then pipelined ones sharing its trace and parent.
func ctxOf(ev *event.Event) []spanIDs {
	if ev.Ctx != event.CtxServer && ev.Ctx != event.CtxClient {
		return nil
	}
	out := []spanIDs{{trace: ev.TraceID, span: ev.SpanID, parent: ev.ParentID, flags: ev.TraceFlags}}
	for _, id := range ev.MoreSpanIDs {
		out = append(out, spanIDs{trace: ev.TraceID, span: id, parent: ev.ParentID, flags: ev.TraceFlags})
	}
	return out
}

// takeCtx pops the next kernel-assigned span of a direction.
func takeCtx(q *[]spanIDs) (spanIDs, bool) {
	if len(*q) == 0 {
		return spanIDs{}, false
	}
	k := (*q)[0]
	*q = (*q)[1:]
	return k, true
}

// maxQuietSegments: a connection joined mid-stream waits for a start line,
// but one that shows none in this many segments is not HTTP.
const maxQuietSegments = 16

// Correlator is not safe for concurrent use: one goroutine feeds it
// events in ring buffer order. Only Stats may be read concurrently.
type Correlator struct {
	opts  Options
	emit  func(*spans.Span)
	conns *simplelru.LRU[uint64, *conn]
	// lastDrop is when the kernel last dropped an event, as last told
	// (DroppedAt).
	lastDrop uint64
	// h2links: HTTP/2 client connections' streams, for the server's end
	// on this host (h2link.go).
	h2links map[h2linkKey]*h2linkTable
	// h2awaiting: finished server streams waiting for their client's
	// event (h2link.go).
	h2awaiting map[h2streamKey]*exchange
	// h2claims: the requests of client streams a Go goroutine will open
	// for others (h2claims.go).
	h2claims map[h2ClaimKey]h2Claim
	// h2opened: the spans the kernel decided for client streams about to
	// open, by connection (h2open.go).
	h2opened  map[uint64]map[uint32]h2Opened
	h2openedN int
	// h2readers: the HTTP/2 server connection each goroutine reads
	// (h2serve.go).
	h2readers map[h2ReaderKey]*conn
	// h2creators: the HTTP/2 server connections whose readers each
	// goroutine created (h2serve.go).
	h2creators map[h2ReaderKey]map[*conn]struct{}
	// h2fresh: the server connections marked fresh, by their link key
	// (h2serve.go).
	h2fresh map[h2linkKey]*conn
	ids     *idSource
	stats   Stats
	log     *slog.Logger
	// dropping is set while weft itself removes a connection, so that the
	// LRU's eviction callback only acts on evictions by capacity.
	dropping bool
	// spare holds exchanges whose span was handed on, for reuse: emit
	// does not keep the span.
	spare []*exchange
}

// maxSpare bounds the exchanges kept for reuse.
const maxSpare = 256

// New returns a correlator that hands every finished span to emit.
func New(opts Options, emit func(*spans.Span)) *Correlator {
	opts.defaults()
	c := &Correlator{
		opts: opts,
		emit: emit,
		ids:  newIDSource(),
		log:  slog.With("component", "correlate"),
	}
	c.conns, _ = simplelru.NewLRU[uint64, *conn](opts.MaxConns, func(_ uint64, cn *conn) {
		if c.dropping {
			return
		}
		c.stats.EvictedConns.Add(1)
		c.abandon(cn, cn.lastTS, "connection_evicted")
		if cn.h2 != nil {
			c.unlinkClient(cn.h2, cn.lastTS)
			c.forgetH2Reader(cn)
		}
	})
	return c
}

// Stats exposes the counters.
func (c *Correlator) Stats() *Stats { return &c.stats }

// Handle consumes one kernel event. The event's payload is not retained.
func (c *Correlator) Handle(ev *event.Event) {
	c.stats.Events.Add(1)
	switch ev.Kind {
	case event.KindData:
		c.data(ev)
	case event.KindClose:
		c.closeH2Opened(event.TLSConn(ev.ConnID))
		// The socket's bytes and, over TLS, its plaintext.
		for _, id := range []uint64{ev.ConnID, event.TLSConn(ev.ConnID)} {
			if cn, ok := c.conns.Peek(id); ok {
				if ev.Gap&gapOf(ev, id) != 0 {
					c.lostEvents(cn, ev.Time)
				}
				if ev.Bytes > 0 {
					// It left bytes unread: it stopped reading, whoever
					// closed first.
					cn.endedBy = endedHere
				}
				cn.ended(ev.Dir)
				c.closeConn(cn, ev.Time)
				c.drop(id)
			}
		}
	case event.KindFirstFin:
		for _, id := range []uint64{ev.ConnID, event.TLSConn(ev.ConnID)} {
			if cn, ok := c.conns.Peek(id); ok {
				cn.ended(ev.Dir)
			}
		}
	case event.KindExit:
		c.exit(ev.PID, ev.Time)
	case event.KindH2Claim:
		c.h2Claim(ev)
	case event.KindH2Serve:
		c.h2Serve(ev)
	case event.KindH2Open:
		c.h2Open(ev)
	}
}

func (c *Correlator) data(ev *event.Event) {
	cn, ok := c.conns.Get(ev.ConnID)
	if ok && ev.Local.IsValid() && (ev.Local != cn.local || ev.Remote != cn.remote) {
		// Another socket at the address of one whose close the full ring
		// buffer dropped: what that one had in flight cannot be ended.
		c.lostEvents(cn, ev.Time)
		c.drop(ev.ConnID)
		ok = false
	}
	if ok && cn.pid != ev.PID {
		// The socket moved to another process, or its address was reused
		// after a close weft missed: start afresh.
		c.closeConn(cn, cn.lastTS)
		c.drop(ev.ConnID)
		ok = false
	}
	if !ok {
		cn = &conn{
			id: ev.ConnID, pid: ev.PID, local: ev.Local, remote: ev.Remote, tls: ev.TLS,
			in:  httpparse.NewParser(httpparse.ModeDetect),
			out: httpparse.NewParser(httpparse.ModeDetect),
		}
		// weft may join a keep-alive connection in the middle of a body
		// (it started after the connection did): wait for a start line
		// rather than judge the protocol by the first bytes seen.
		cn.in.StartMidStream()
		cn.out.StartMidStream()
		c.conns.Add(ev.ConnID, cn)
	}
	cn.lastTS = ev.Time
	if ev.Gap != 0 {
		c.lostEvents(cn, ev.Time)
	}
	if cn.upgraded != nil && ev.Capture == event.CapturePrefix && ev.Dir == requestDir(cn.upgraded) {
		c.endUpgrade(cn) // the requester went on without HTTP/2's preface
	}
	if cn.h2 == nil && ev.Capture != event.CapturePrefix {
		c.startH2(cn, ev)
	}
	if cn.h2 != nil {
		c.h2data(cn, ev)
		return
	}
	if cn.notHTTP {
		return
	}
	p, errs, kctx := cn.out, &cn.outErrs, &cn.outCtx
	if ev.Dir == event.Ingress {
		p, errs, kctx = cn.in, &cn.inErrs, &cn.inCtx
	}
	if k := ctxOf(ev); k != nil {
		*kctx = k
	} else if ev.Ctx == event.CtxServerCont {
		c.joinTrace(cn, ev)
	}
	msgs := p.Feed(ev.Payload, int(ev.Bytes), ev.Time)
	c.countErrors(p, errs)
	if len(msgs) > 0 {
		cn.messages = true
	} else if !cn.messages {
		cn.quiet++
	}
	if p.NotHTTP() || (!cn.messages && cn.quiet > maxQuietSegments) {
		cn.notHTTP = true
		c.stats.NotHTTP.Add(1)
		if c.opts.NotHTTP != nil {
			c.opts.NotHTTP(cn.id, cn.local.Port(), cn.remote.Port())
		}
		c.abandon(cn, ev.Time, "protocol_error")
		return
	}
	for i := range msgs {
		c.message(cn, ev, &msgs[i])
	}
}

// countErrors adds what a parser counted since the last call; seen holds
// the parser's counts at that call.
func (c *Correlator) countErrors(p *httpparse.Parser, seen *httpparse.ErrorCounts) {
	e := p.Errors()
	if e == *seen {
		return
	}
	c.stats.mu.Lock()
	for i := range e {
		if d := e[i] - seen[i]; d > 0 {
			c.stats.ParseErrors.Add(d)
			c.stats.byKind[i] += d
		}
	}
	c.stats.mu.Unlock()
	*seen = e
}

func (c *Correlator) message(cn *conn, ev *event.Event, m *httpparse.Message) {
	ingress := ev.Dir == event.Ingress
	if m.IsRequest {
		headSeen := &cn.outHead
		if ingress {
			headSeen = &cn.inHead
		}
		if m.Phase == httpparse.PhaseHead {
			*headSeen = true
		} else if *headSeen {
			*headSeen = false // the terminal event of a request already started
			return
		} else if m.HeadTS == 0 {
			return // aborted before its head was known
		}
		if ingress {
			c.startServer(cn, ev, m)
		} else {
			c.startClient(cn, ev, m)
		}
		return
	}
	if m.Phase == httpparse.PhaseHead || m.Interim {
		return
	}
	q := &cn.server
	if ingress {
		q = &cn.client
	}
	c.finish(cn, q, m)
}

// spareExchange reuses an exchange done with, or makes one.
func (c *Correlator) spareExchange() *exchange {
	if n := len(c.spare); n > 0 {
		ex := c.spare[n-1]
		c.spare = c.spare[:n-1]
		return ex
	}
	return new(exchange)
}

func (c *Correlator) newExchange(cn *conn, ev *event.Event, m *httpparse.Message, kind spans.Kind) *exchange {
	ex := c.spareExchange()
	*ex = exchange{
		startTS: m.StartTS,
		lastTS:  ev.Time,
		target:  m.Target,
		h2c:     m.UpgradeH2C,
		span: spans.Span{
			SpanID:           c.ids.spanID(),
			Kind:             kind,
			Start:            c.opts.Clock.Wall(m.StartTS),
			PID:              ev.PID,
			TID:              ev.TID,
			Method:           m.Method,
			Host:             m.Host,
			UserAgent:        m.UserAgent,
			Proto:            protoVersion(m),
			TLS:              cn.tls,
			Local:            cn.local,
			Remote:           cn.remote,
			RequestBodySize:  m.ContentLength,
			ResponseBodySize: -1,
			RPCStatus:        -1,
		},
	}
	return ex
}

// describe names the span of an exchange from its request target, once
// it is done: the sampling decision may change until then (a traceparent
// found after the head began), and an unsampled exchange is spared the
// work unless span metrics need its route.
func (c *Correlator) describe(ex *exchange) {
	path, query := httpparse.SplitTarget(ex.target)
	ex.span.Path, ex.span.Route = path, c.opts.Router.Route(path)
	if c.opts.KeepQuery {
		ex.span.Query = query
	}
	ex.span.Name = spanName(ex.span.Method, ex.span.Route)
	if ex.span.RPCService != "" {
		ex.span.Name = ex.span.RPCService + "/" + ex.span.RPCMethod // the RPC conventions' name
	}
}

func (c *Correlator) startServer(cn *conn, ev *event.Event, m *httpparse.Message) {
	ex := c.newExchange(cn, ev, m, spans.KindServer)
	if k, ok := takeCtx(&cn.inCtx); ok {
		ex.span.TraceID, ex.span.SpanID, ex.span.ParentID, ex.span.TraceFlags = k.trace, k.span, k.parent, k.flags
		ex.span.ParentRemote = k.parent.IsValid()
	} else {
		c.noKernelCtx(ex)
	}
	if !c.enqueue(&cn.server, ex) {
		return
	}
	cn.out.PushRequestMethod(m.Method)
}

// noKernelCtx gives a span the kernel assigned no ids to (it did not see
// its request start: a head cut before its method, a capture gap) a trace
// of its own. The kernel alone decides parents: a guess here could name a
// wrong one, which is worse than a split trace.
func (c *Correlator) noKernelCtx(ex *exchange) {
	ex.span.TraceID = c.ids.traceID()
	ex.span.TraceFlags = c.opts.Sampler.Flags(ex.span.TraceID)
	c.stats.NoKernelCtx.Add(1)
}

// joinTrace applies a traceparent the kernel found after the start of a
// request head to that request's server span, parsed yet or not.
func (c *Correlator) joinTrace(cn *conn, ev *event.Event) {
	for i := range cn.inCtx {
		if cn.inCtx[i].span == ev.SpanID {
			cn.inCtx[i].trace, cn.inCtx[i].parent, cn.inCtx[i].flags = ev.TraceID, ev.ParentID, ev.TraceFlags
			return
		}
	}
	for _, ex := range cn.server {
		if ex.span.SpanID == ev.SpanID {
			ex.span.TraceID, ex.span.ParentID, ex.span.TraceFlags = ev.TraceID, ev.ParentID, ev.TraceFlags
			ex.span.ParentRemote = true
			return
		}
	}
}

func (c *Correlator) startClient(cn *conn, ev *event.Event, m *httpparse.Message) {
	ex := c.newExchange(cn, ev, m, spans.KindClient)
	if k, ok := takeCtx(&cn.outCtx); ok {
		ex.span.TraceID, ex.span.SpanID, ex.span.ParentID, ex.span.TraceFlags = k.trace, k.span, k.parent, k.flags
	} else {
		c.noKernelCtx(ex)
	}
	if !c.enqueue(&cn.client, ex) {
		return
	}
	cn.in.PushRequestMethod(m.Method)
}

func (c *Correlator) enqueue(q *[]*exchange, ex *exchange) bool {
	if len(*q) >= c.opts.MaxPipelined {
		c.stats.Overflow.Add(1)
		c.recycle(ex)
		return false
	}
	*q = append(*q, ex)
	return true
}

// finish pairs a complete response with the oldest pending request:
// HTTP/1.x answers in order, pipelined or not.
func (c *Correlator) finish(cn *conn, q *[]*exchange, m *httpparse.Message) {
	if len(*q) == 0 {
		c.stats.Unmatched.Add(1)
		return
	}
	ex := popOldest(q)
	ex.span.StatusCode = m.StatusCode
	ex.span.ResponseBodySize = m.BodyBytes
	if m.Phase == httpparse.PhaseAborted {
		// The response started but never completed (the connection
		// closed mid-body, or its framing could not be followed).
		ex.span.ErrorType = "response_incomplete"
		ex.endAt(max(m.HeadTS, m.StartTS, cn.lastTS))
	} else {
		ex.endAt(m.EndTS)
	}
	if m.StatusCode == 101 && ex.h2c && m.Phase == httpparse.PhaseDone && cn.upgraded == nil {
		cn.upgraded = ex // its answer is HTTP/2 stream 1
		return
	}
	c.done(ex)
}

// requestDir is the direction an exchange's request flowed in.
func requestDir(ex *exchange) event.Direction {
	if ex.span.Kind == spans.KindServer {
		return event.Ingress
	}
	return event.Egress
}

// endUpgrade ends a request answered 101 whose connection did not go on
// as HTTP/2: the 101 was its answer.
func (c *Correlator) endUpgrade(cn *conn) {
	ex := cn.upgraded
	cn.upgraded = nil
	c.done(ex)
}

func (c *Correlator) done(ex *exchange) {
	if ex.span.End.Before(ex.span.Start) {
		ex.span.End = ex.span.Start
	}
	if ex.span.Kind == spans.KindServer {
		c.stats.ServerSpans.Add(1)
	} else {
		c.stats.ClientSpans.Add(1)
		if !ex.span.ParentID.IsValid() {
			c.stats.ClientRoots.Add(1)
		}
	}
	// An unsampled span is named only when span metrics need its route.
	if c.opts.Observe != nil {
		c.describe(ex)
		c.opts.Observe(&ex.span)
	}
	if ex.span.TraceFlags&sampling.FlagSampled == 0 {
		c.stats.Unsampled.Add(1)
	} else {
		if c.opts.Observe == nil {
			c.describe(ex)
		}
		c.emit(&ex.span)
	}
	c.recycle(ex)
}

// recycle keeps an exchange no queue holds any more for the next request.
func (c *Correlator) recycle(ex *exchange) {
	if len(c.spare) < maxSpare {
		c.spare = append(c.spare, ex)
	}
}

// popOldest takes the first exchange of a queue, keeping the queue's
// array for the next request.
func popOldest(q *[]*exchange) *exchange {
	ex := (*q)[0]
	n := copy(*q, (*q)[1:])
	(*q)[n] = nil
	*q = (*q)[:n]
	return ex
}

// closeConn completes responses delimited by the close, then ends what is
// still pending as errors. A response this process received, cut after
// its whole head, is no error (and no parse error) when the process ended
// the connection or left bytes unread: it chose not to read the body (a
// client that needs only the status). Cut by the server (its FIN or reset
// first), or with the ender unknown (the process exited, the connection
// was evicted), it is an error. A response this process sent and could
// not finish is an error whoever ended: its writes failed, as an
// in-process instrumentation would record.
func (c *Correlator) closeConn(cn *conn, ts uint64) {
	if cn.upgraded != nil {
		c.endUpgrade(cn)
	}
	if cn.h2 != nil {
		c.closeH2(cn, ts)
	} else if !cn.notHTTP {
		for _, side := range []struct {
			p    *httpparse.Parser
			q    *[]*exchange
			seen *httpparse.ErrorCounts
			// receiving: responses this process receives (client spans)
			receiving bool
		}{{cn.in, &cn.client, &cn.inErrs, true}, {cn.out, &cn.server, &cn.outErrs, false}} {
			msgs := side.p.Close(ts)
			for i := range msgs {
				m := &msgs[i]
				if m.IsRequest || m.Phase == httpparse.PhaseHead || m.Interim {
					continue
				}
				if side.receiving && cn.endedBy == endedHere && bodyUnread(m) {
					side.seen[httpparse.ErrIncomplete]++ // the parser counted it
					c.finishUnread(side.q, m)
					continue
				}
				c.finish(cn, side.q, m)
			}
			c.countErrors(side.p, side.seen)
		}
	}
	c.abandon(cn, ts, "connection_closed")
}

// ender is the side that closed a connection first.
type ender uint8

const (
	endUnknown ender = iota
	endedHere
	endedByPeer
)

// ended records who closed first, if not known yet: Egress this process,
// Ingress the peer.
func (cn *conn) ended(by event.Direction) {
	if cn.endedBy != endUnknown {
		return
	}
	cn.endedBy = endedByPeer
	if by == event.Egress {
		cn.endedBy = endedHere
	}
}

// bodyUnread reports a response cut by the close after its whole head.
func bodyUnread(m *httpparse.Message) bool {
	return m.Phase == httpparse.PhaseAborted && m.Err == httpparse.ErrIncomplete && m.HeadTS != 0 && !m.HeadTruncated
}

// finishUnread ends the client span of a response its process stopped
// reading: answered with the head's status; the body's size is the
// declared one.
func (c *Correlator) finishUnread(q *[]*exchange, m *httpparse.Message) {
	if len(*q) == 0 {
		c.stats.Unmatched.Add(1)
		return
	}
	ex := popOldest(q)
	ex.span.StatusCode = m.StatusCode
	ex.span.ResponseBodySize = max(m.ContentLength, m.BodyBytes)
	if m.ContentLength < 0 {
		ex.span.ResponseBodySize = -1 // unknown: the rest was never read
	}
	ex.endAt(m.HeadTS)
	c.done(ex)
}

// abandon ends every pending request of a connection with an error.
func (c *Correlator) abandon(cn *conn, ts uint64, why string) {
	for _, q := range []*[]*exchange{&cn.server, &cn.client} {
		for _, ex := range *q {
			if c.lostSince(ex) {
				continue
			}
			c.stats.Unanswered.Add(1)
			ex.endAt(ts)
			ex.span.ErrorType = why
			c.done(ex)
		}
		*q = nil
	}
}

func (c *Correlator) exit(pid uint32, ts uint64) {
	for _, id := range c.conns.Keys() {
		if cn, ok := c.conns.Peek(id); ok && cn.pid == pid {
			c.closeConn(cn, ts)
			c.drop(id)
		}
	}
}

// Expire ends requests older than RequestTimeout and forgets idle
// connections. now is in the kernel's monotonic clock.
func (c *Correlator) Expire(now uint64) {
	c.expireLinks(now)
	c.expireH2Claims(now)
	c.expireH2Opened(now)
	timeout := uint64(c.opts.RequestTimeout.Nanoseconds())
	idle := uint64(c.opts.IdleTimeout.Nanoseconds())
	for _, id := range c.conns.Keys() {
		cn, ok := c.conns.Peek(id)
		if !ok {
			continue
		}
		for _, q := range []*[]*exchange{&cn.server, &cn.client} {
			for len(*q) > 0 && now > (*q)[0].lastTS+timeout {
				ex := popOldest(q)
				if c.lostSince(ex) {
					continue
				}
				c.stats.Timeouts.Add(1)
				ex.endAt(now)
				ex.span.ErrorType = "timeout"
				c.done(ex)
			}
		}
		// An HTTP/2 connection stays until its close (or the MaxConns
		// bound): its HPACK tables cannot be rebuilt after an idle spell,
		// and gRPC keeps connections open and quiet for long.
		if cn.h2 == nil && len(cn.server)+len(cn.client) == 0 && now > cn.lastTS+idle {
			c.drop(id)
		}
	}
}

func (c *Correlator) drop(id uint64) {
	c.dropping = true
	c.conns.Remove(id)
	c.dropping = false
}

// Flush ends what waits for events that will not come now: the server
// spans waiting for their client's (h2link.go). Called at shutdown.
func (c *Correlator) Flush() { c.expireLinks(0) }

// Pending is the number of requests awaiting an answer.
func (c *Correlator) Pending() int {
	n := 0
	for _, id := range c.conns.Keys() {
		if cn, ok := c.conns.Peek(id); ok {
			n += len(cn.server) + len(cn.client)
		}
	}
	return n
}

func protoVersion(m *httpparse.Message) string {
	if m.ProtoMajor == 1 && m.ProtoMinor == 0 {
		return "1.0"
	}
	return "1.1"
}

func spanName(method, route string) string {
	if route == "" {
		return method
	}
	return method + " " + route
}
