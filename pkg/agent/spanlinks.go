package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/weftdev/weft/pkg/export"
	"github.com/weftdev/weft/pkg/spans"
)

// Bounds of what spanLinks remembers. A span id stays in the sampled set
// from its first sample until its span is exported (a fraction of a second
// to the request's length); a name stays until the profile naming it is
// written (one interval). Past the bounds the oldest go: a span then loses
// its pyroscope.profile.id or its span_name label, nothing else.
const (
	sampledSpans = 1 << 15
	spanNames    = 1 << 14
)

// spanLinks ties spans and samples both ways: the profiler names sampled
// spans after the spans weft exports, and exported spans say whether they
// got samples. Every exported span is looked up, so the sampled set is
// two plain maps (the older dropped when the newer fills), not an LRU.
type spanLinks struct {
	mu        sync.RWMutex
	cur, prev map[spans.SpanID]struct{}

	names *lru.Cache[spans.SpanID, string]
	mark  *watermark
}

func newSpanLinks() *spanLinks {
	// The size is positive, the only error lru.New reports.
	names, _ := lru.New[spans.SpanID, string](spanNames)
	return &spanLinks{cur: map[spans.SpanID]struct{}{}, names: names, mark: newWatermark()}
}

// markSampled records that a sample was taken in span id.
func (l *spanLinks) markSampled(id spans.SpanID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.cur[id]; ok {
		return
	}
	if len(l.cur) >= sampledSpans/2 {
		l.prev, l.cur = l.cur, make(map[spans.SpanID]struct{}, sampledSpans/2)
	}
	l.cur[id] = struct{}{}
}

func (l *spanLinks) sampled(id spans.SpanID) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	_, a := l.cur[id]
	_, b := l.prev[id]
	return a || b
}

// name is the profiler's span namer.
func (l *spanLinks) name(_ spans.TraceID, id spans.SpanID) string {
	n, _ := l.names.Get(id)
	return n
}

// note records a sampled span's name and reports whether it was sampled.
func (l *spanLinks) note(s *spans.Span) bool {
	if !l.sampled(s.SpanID) {
		return false
	}
	name := s.Name
	if name == "" {
		name = s.Method
	}
	l.names.Add(s.SpanID, name)
	return true
}

// linkedExporter marks each span Profiled if any sample carried its id,
// which is known once every sample taken before the span ended has been
// read. Most of the time the sampler is settled when a span arrives (the
// kernel wakes the reader for each sample, a few hundred a second at
// most): the span goes on at once, for a look-up. Otherwise it is held
// until the watermark passes it (the sample ring is drained every
// sampleReadSlice, and each settled moment moves the mark), or maxHold,
// should the sample reader stall. While spans keep coming, each Export
// passes on a few due ones (so the event loop exports at the pace it
// would without profiling, and the next exporter sees a steady flow, not
// bursts that overflow its queue); when they stop, the exporter's own
// goroutine passes on the rest.
type linkedExporter struct {
	next    export.Exporter
	links   *spanLinks
	maxHold time.Duration
	// settled reports whether every sample begun so far has been read
	// and marked (Sampler.Settled).
	settled func() bool

	mu     sync.Mutex
	queue  []heldSpan // in hand-over order, so in mark order, from head
	head   int
	closed bool

	relMu sync.Mutex // one releaser at a time keeps the order
	batch []heldSpan

	closing chan struct{}
	done    chan struct{}

	lastExport atomic.Uint64 // monoNow of the last Export
	held       atomic.Int64  // queued or being released
	profiled   atomic.Uint64 // spans passed on with Profiled set
	late       atomic.Uint64 // spans passed on after maxHold without the mark
	unheld     atomic.Uint64 // spans passed on at once, the sampler settled
}

type heldSpan struct {
	span spans.Span
	mark uint64 // CLOCK_MONOTONIC when it was handed over
}

const (
	defaultMaxHold = 2 * time.Second
	holdQueue      = 1 << 16
	// releasePerExport bounds the spans one Export passes on: more than
	// one, so a backlog drains, few, so the event loop is not held up.
	releasePerExport = 4
	// exportIdle is how long without an Export before the exporter's
	// goroutine passes due spans on itself.
	exportIdle = 20 * time.Millisecond
)

var _ export.Exporter = (*linkedExporter)(nil)

func newLinkedExporter(next export.Exporter, links *spanLinks, maxHold time.Duration, settled func() bool) *linkedExporter {
	e := &linkedExporter{
		next:    next,
		links:   links,
		maxHold: maxHold,
		settled: settled,
		closing: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go e.run()
	return e
}

// Export passes s on at once when the sampler is settled; otherwise it
// queues a copy of s (the correlator's span is not ours to keep), then
// passes on what is due. It never waits. With the queue full, or after
// Shutdown, the span goes on at once, decided on what is known.
func (e *linkedExporter) Export(s *spans.Span) {
	now := monoNow()
	e.lastExport.Store(now)
	// now is taken before the sampler is asked: every sample stamped
	// before it, so every sample that can carry s's id, is marked.
	if e.settled != nil && e.settled() {
		if e.held.Load() > 0 {
			// The spans held before s are settled as well.
			e.links.mark.advance(now)
			e.releaseDue(releasePerExport)
		}
		e.unheld.Add(1)
		e.release(s)
		return
	}
	// A span sampled already (most with CPU to speak of) is named at once,
	// for profiles written while it is held.
	e.links.note(s)
	e.mu.Lock()
	if !e.closed && len(e.queue)-e.head < holdQueue {
		e.queue = append(e.queue, heldSpan{span: *s, mark: now})
		e.held.Add(1)
		e.mu.Unlock()
		e.releaseDue(releasePerExport)
		return
	}
	e.mu.Unlock()
	cp := *s
	e.release(&cp)
}

// run passes due spans on when the watermark moves (or maxHold may have
// passed) and Export has not been called for a while; at Shutdown,
// everything.
func (e *linkedExporter) run() {
	defer close(e.done)
	tick := time.NewTicker(max(e.maxHold/4, time.Millisecond))
	defer tick.Stop()
	for {
		_, moved := e.links.mark.reached(0)
		select {
		case <-moved:
		case <-tick.C:
		case <-e.closing:
			e.relMu.Lock() // wait for a release under way
			e.relMu.Unlock()
			e.releaseDue(-1)
			return
		}
		for monoNow()-e.lastExport.Load() >= uint64(exportIdle) && e.releaseDue(releasePerExport*64) {
		}
	}
}

// releaseDue passes on up to limit spans at the head of the queue that are
// due (a negative limit: all of them, due or not, at Shutdown), and
// reports whether it passed on any. Should another goroutine be
// releasing, it leaves them to it or to the next call.
func (e *linkedExporter) releaseDue(limit int) bool {
	if !e.relMu.TryLock() {
		return false
	}
	defer e.relMu.Unlock()
	mark, now := e.links.mark.get(), monoNow()
	e.mu.Lock()
	n, end := e.head, len(e.queue)
	if limit >= 0 {
		end = min(end, e.head+limit)
	}
	for n < end && (limit < 0 || e.due(&e.queue[n], mark, now)) {
		n++
	}
	if n == e.head {
		e.mu.Unlock()
		return false
	}
	e.batch = append(e.batch[:0], e.queue[e.head:n]...)
	clear(e.queue[e.head:n])
	e.head = n
	if e.head == len(e.queue) {
		e.queue, e.head = e.queue[:0], 0
	} else if e.head > len(e.queue)/2 {
		// Compact now and then, not at every batch.
		old := len(e.queue)
		e.queue = append(e.queue[:0], e.queue[e.head:]...)
		clear(e.queue[len(e.queue):old])
		e.head = 0
	}
	e.mu.Unlock()
	for i := range e.batch {
		e.release(&e.batch[i].span)
		e.held.Add(-1)
	}
	clear(e.batch) // drop the spans' strings
	return true
}

// due reports whether h can go: the watermark passed its mark, or it was
// held maxHold (counted).
func (e *linkedExporter) due(h *heldSpan, mark, now uint64) bool {
	if mark >= h.mark {
		return true
	}
	if now-h.mark >= uint64(e.maxHold) {
		e.late.Add(1)
		return true
	}
	return false
}

func (e *linkedExporter) release(s *spans.Span) {
	if e.links.note(s) {
		s.Profiled = true
		e.profiled.Add(1)
	}
	e.next.Export(s)
}

// Shutdown passes every held span on, then shuts the next exporter down.
func (e *linkedExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if !e.closed {
		e.closed = true
		close(e.closing)
	}
	e.mu.Unlock()
	select {
	case <-e.done:
	case <-ctx.Done():
	}
	return e.next.Shutdown(ctx)
}

// Stats counts held spans as received and queued, so that every span is
// still accounted for.
func (e *linkedExporter) Stats() export.Stats {
	held := e.held.Load()
	s := e.next.Stats()
	s.Received += uint64(held)
	s.QueueLen += int(held)
	return s
}

func (e *linkedExporter) snapshot() map[string]uint64 {
	return map[string]uint64{
		"spans_profiled":          e.profiled.Load(),
		"spans_profile_unsettled": e.late.Load(),
		"spans_profile_unheld":    e.unheld.Load(),
	}
}
