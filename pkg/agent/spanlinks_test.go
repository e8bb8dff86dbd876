package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/correlate"
	"github.com/weftdev/weft/pkg/export"
	"github.com/weftdev/weft/pkg/spans"
)

// recorder is an exporter that keeps what it gets.
type recorder struct {
	mu    sync.Mutex
	got   []spans.Span
	shut  bool
	added chan struct{}
}

func newRecorder() *recorder { return &recorder{added: make(chan struct{}, 1024)} }

func (r *recorder) Export(s *spans.Span) {
	r.mu.Lock()
	r.got = append(r.got, *s)
	r.mu.Unlock()
	r.added <- struct{}{}
}

func (r *recorder) Shutdown(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.shut = true
	return nil
}

func (r *recorder) Stats() export.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return export.Stats{Received: uint64(len(r.got)), Exported: uint64(len(r.got))}
}

func (r *recorder) spans() []spans.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]spans.Span(nil), r.got...)
}

func (r *recorder) waitN(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for len(r.spans()) < n {
		select {
		case <-r.added:
		case <-deadline:
			t.Fatalf("%d spans passed on within %v, want %d", len(r.spans()), within, n)
		}
	}
}

func testSpan(id byte, name string) *spans.Span {
	return &spans.Span{TraceID: spans.TraceID{0: 1}, SpanID: spans.SpanID{7: id}, Kind: spans.KindServer, Name: name, Method: "GET"}
}

// A span waits for the samples read before it was handed over, then goes
// on marked Profiled if one of them carried its id; its name reaches the
// profiler.
func TestLinkedExporterWaitsForSamples(t *testing.T) {
	rec := newRecorder()
	links := newSpanLinks()
	e := newLinkedExporter(rec, links, time.Minute, nil)
	defer e.Shutdown(context.Background())

	sampled, idle := testSpan(1, "GET /burn"), testSpan(2, "GET /idle")
	e.Export(sampled)
	e.Export(idle)
	sampled.Name = "changed by the caller" // the exporter keeps its own copy
	time.Sleep(50 * time.Millisecond)
	if n := len(rec.spans()); n != 0 {
		t.Fatalf("%d spans passed on before the samples were read", n)
	}
	if st := e.Stats(); st.Received != 2 || st.QueueLen != 2 {
		t.Errorf("held spans not accounted for: %+v", st)
	}

	// The reader finds a sample of the first span, then the ring empty.
	links.markSampled(spans.SpanID{7: 1})
	links.mark.advance(correlate.Monotonic())
	rec.waitN(t, 2, 5*time.Second)
	got := rec.spans()
	if !got[0].Profiled || got[0].Name != "GET /burn" || got[1].Profiled {
		t.Errorf("passed on %+v", got)
	}
	if n := links.name(spans.TraceID{}, spans.SpanID{7: 1}); n != "GET /burn" {
		t.Errorf("span name for the profiler %q", n)
	}
	if n := links.name(spans.TraceID{}, spans.SpanID{7: 2}); n != "" {
		t.Errorf("an unsampled span was named: %q", n)
	}
	m := e.snapshot()
	if m["spans_profiled"] != 1 || m["spans_profile_unsettled"] != 0 {
		t.Errorf("metrics %v", m)
	}
	if st := e.Stats(); st.Received != 2 || st.QueueLen != 0 {
		t.Errorf("stats after release: %+v", st)
	}
}

// Should the reader stall, spans go on after maxHold, counted.
func TestLinkedExporterMaxHold(t *testing.T) {
	rec := newRecorder()
	links := newSpanLinks()
	e := newLinkedExporter(rec, links, 100*time.Millisecond, nil)
	defer e.Shutdown(context.Background())
	start := time.Now()
	e.Export(testSpan(1, "a"))
	e.Export(testSpan(2, "b"))
	rec.waitN(t, 2, 5*time.Second)
	if el := time.Since(start); el < 100*time.Millisecond || el > 2*time.Second {
		t.Errorf("released after %v, want about 100ms", el)
	}
	if m := e.snapshot(); m["spans_profile_unsettled"] != 2 {
		t.Errorf("metrics %v", m)
	}
}

// Shutdown passes every held span on at once, then shuts the next
// exporter down; spans exported after it still reach the next exporter
// (which counts them as dropped).
func TestLinkedExporterShutdown(t *testing.T) {
	rec := newRecorder()
	links := newSpanLinks()
	e := newLinkedExporter(rec, links, time.Hour, nil)
	for i := range 10 {
		e.Export(testSpan(byte(i+1), "x"))
	}
	links.markSampled(spans.SpanID{7: 3})
	start := time.Now()
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > time.Second {
		t.Errorf("shutdown took %v", el)
	}
	got := rec.spans()
	if len(got) != 10 || !rec.shut {
		t.Fatalf("after shutdown: %d spans, next shut down %v", len(got), rec.shut)
	}
	if !got[2].Profiled {
		t.Error("span 3 was sampled")
	}
	e.Export(testSpan(11, "late"))
	if len(rec.spans()) != 11 {
		t.Error("a span exported after shutdown vanished")
	}
}

func TestWatermark(t *testing.T) {
	w := newWatermark()
	ok, moved := w.reached(10)
	if ok {
		t.Fatal("reached before any advance")
	}
	go w.advance(20)
	select {
	case <-moved:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up on advance")
	}
	if ok, _ := w.reached(20); !ok {
		t.Error("20 not reached after advance(20)")
	}
	w.advance(5) // never back
	if ok, _ := w.reached(20); !ok {
		t.Error("the mark moved back")
	}
}

// Spans leave in the order they came, each once the watermark passes the
// time it was handed over: a batch at a time.
func TestLinkedExporterReleasesInOrder(t *testing.T) {
	rec := newRecorder()
	links := newSpanLinks()
	e := newLinkedExporter(rec, links, time.Hour, nil)
	defer e.Shutdown(context.Background())
	for i := range 60 {
		e.Export(testSpan(byte(i), "first"))
	}
	// The mark falls strictly between the two groups' hand-over times
	// (the exporter's clock, monoNow, ticks in nanoseconds).
	time.Sleep(time.Millisecond)
	links.mark.advance(monoNow())
	time.Sleep(time.Millisecond)
	for i := range 40 {
		e.Export(testSpan(byte(100+i), "second"))
	}
	rec.waitN(t, 60, 5*time.Second)
	time.Sleep(100 * time.Millisecond)
	if n := len(rec.spans()); n != 60 {
		t.Fatalf("%d spans passed on, want the 60 handed over before the mark", n)
	}
	links.mark.advance(correlate.Monotonic())
	rec.waitN(t, 100, 5*time.Second)
	for i, s := range rec.spans() {
		want := byte(i)
		if i >= 60 {
			want = byte(100 + i - 60)
		}
		if s.SpanID[7] != want {
			t.Fatalf("span %d is %d, want %d", i, s.SpanID[7], want)
		}
	}
	if st := e.Stats(); st.QueueLen != 0 || st.Received != 100 {
		t.Errorf("stats %+v", st)
	}
}

// With the sampler settled a span goes on at once, marked if a sample
// carried its id, and takes the spans held before it along; while samples
// are unread, spans are held as before.
func TestLinkedExporterSettled(t *testing.T) {
	rec := newRecorder()
	links := newSpanLinks()
	var settled atomic.Bool
	e := newLinkedExporter(rec, links, time.Hour, settled.Load)
	defer e.Shutdown(context.Background())

	e.Export(testSpan(1, "held"))
	time.Sleep(50 * time.Millisecond)
	if n := len(rec.spans()); n != 0 {
		t.Fatalf("%d spans passed on with samples unread", n)
	}

	links.markSampled(spans.SpanID{7: 2})
	settled.Store(true)
	e.Export(testSpan(2, "sampled"))
	e.Export(testSpan(3, "idle"))
	rec.waitN(t, 3, 5*time.Second)
	byID := map[byte]spans.Span{}
	for _, s := range rec.spans() {
		byID[s.SpanID[7]] = s
	}
	if len(byID) != 3 || byID[1].Profiled || !byID[2].Profiled || byID[3].Profiled {
		t.Errorf("passed on %+v", rec.spans())
	}
	m := e.snapshot()
	if m["spans_profile_unheld"] != 2 || m["spans_profiled"] != 1 || m["spans_profile_unsettled"] != 0 {
		t.Errorf("metrics %v", m)
	}
	if st := e.Stats(); st.QueueLen != 0 || st.Received != 3 {
		t.Errorf("stats %+v", st)
	}
}

// The sampled set forgets the oldest half when full, never the newest.
func TestSampledSetBounded(t *testing.T) {
	l := newSpanLinks()
	id := func(i int) spans.SpanID { return spans.SpanID{0: byte(i), 1: byte(i >> 8), 2: byte(i >> 16)} }
	for i := range 2 * sampledSpans {
		l.markSampled(id(i))
	}
	if !l.sampled(id(2*sampledSpans - 1)) {
		t.Error("the newest span was forgotten")
	}
	if l.sampled(id(0)) {
		t.Error("the set is not bounded")
	}
}

// monoNow reads the kernel's clock, as correlate.Monotonic does.
func TestMonoNow(t *testing.T) {
	a := correlate.Monotonic()
	m := monoNow()
	b := correlate.Monotonic()
	if m+uint64(time.Millisecond) < a || m > b+uint64(time.Millisecond) {
		t.Errorf("monoNow %d not between %d and %d", m, a, b)
	}
}

// The cost profiling adds to each exported span while the sampler is
// settled (the usual case): compare with the next exporter alone.
func BenchmarkLinkedExporterSettled(b *testing.B) {
	links := newSpanLinks()
	for i := range sampledSpans / 2 {
		links.markSampled(spans.SpanID{0: byte(i), 1: byte(i >> 8), 7: 0xff})
	}
	e := newLinkedExporter(discard{}, links, time.Hour, func() bool { return true })
	defer e.Shutdown(context.Background())
	s := testSpan(1, "GET /hello")
	b.ReportAllocs()
	for b.Loop() {
		e.Export(s)
	}
}

type discard struct{}

func (discard) Export(*spans.Span)             {}
func (discard) Shutdown(context.Context) error { return nil }
func (discard) Stats() export.Stats            { return export.Stats{} }
