package export

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/spans"
)

// fakeSender records batches. While gate is open (non-nil), send blocks
// until the gate is closed or ctx ends.
type fakeSender struct {
	mu        sync.Mutex
	batches   [][]string
	gate      chan struct{}
	calls     chan int // receives the batch size of each send, if non-nil
	err       error
	reject    int // spans of each batch rejected in a partial success
	shutdowns int
}

func (f *fakeSender) send(ctx context.Context, batch []queued) (int, error) {
	f.mu.Lock()
	gate, calls := f.gate, f.calls
	f.mu.Unlock()
	if calls != nil {
		calls <- len(batch)
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	names := make([]string, len(batch))
	for i, s := range batch {
		names[i] = s.span.Name
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.batches = append(f.batches, names)
	switch {
	case f.reject > 0:
		return len(batch) - f.reject, f.err
	case f.err != nil:
		return 0, f.err
	}
	return len(batch), nil
}

func (f *fakeSender) shutdown(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.shutdowns++
	return nil
}

func (f *fakeSender) sent() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.batches...)
}

func queuedSpan(name string) queued {
	return queued{span: spans.Span{Name: name}}
}

func newTestQueue(t *testing.T, cfg queueConfig, out sender) (*queue, *counters) {
	t.Helper()
	stats := &counters{}
	q := newQueue(cfg, out, stats, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = q.shutdown(ctx)
	})
	return q, stats
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestQueueDropsWhenFull(t *testing.T) {
	out := &fakeSender{gate: make(chan struct{}), calls: make(chan int, 10)}
	q, stats := newTestQueue(t, queueConfig{size: 4, maxBatch: 2, batchTimeout: time.Hour}, out)

	q.enqueue(queuedSpan("a"))
	q.enqueue(queuedSpan("b"))
	<-out.calls // the worker holds a full batch and is blocked sending it
	for i := range 18 {
		q.enqueue(queuedSpan(strconv.Itoa(i)))
	}
	if got := stats.snapshot(); got.Dropped != 14 || got.QueueLen != 6 {
		t.Fatalf("while blocked: %+v, want 14 dropped and 6 queued", got)
	}

	close(out.gate)
	waitUntil(t, "queue to drain", func() bool { return stats.snapshot().Exported == 6 })
	if got := stats.snapshot(); got.QueueLen != 0 || got.Failed != 0 || got.Dropped != 14 {
		t.Fatalf("after drain: %+v", got)
	}
}

func TestQueueCountsFailures(t *testing.T) {
	out := &fakeSender{err: errors.New("backend unavailable")}
	q, stats := newTestQueue(t, queueConfig{size: 10, maxBatch: 3, batchTimeout: time.Hour}, out)
	for i := range 6 {
		q.enqueue(queuedSpan(strconv.Itoa(i)))
	}
	waitUntil(t, "two failed batches", func() bool { return stats.snapshot().Failed == 6 })

	// A partial success counts only the rejected spans as failed.
	out.mu.Lock()
	out.reject = 1
	out.mu.Unlock()
	for i := range 3 {
		q.enqueue(queuedSpan(strconv.Itoa(i)))
	}
	waitUntil(t, "partial batch", func() bool { return stats.snapshot().Exported == 2 })
	if got := stats.snapshot(); got.Failed != 7 || got.QueueLen != 0 {
		t.Fatalf("got %+v, want 7 failed", got)
	}
}

func TestQueueBatchesBySizeAndTime(t *testing.T) {
	out := &fakeSender{}
	q, stats := newTestQueue(t, queueConfig{size: 100, maxBatch: 3, batchTimeout: 30 * time.Millisecond}, out)
	for i := range 7 {
		q.enqueue(queuedSpan(strconv.Itoa(i)))
	}
	waitUntil(t, "all spans", func() bool { return stats.snapshot().Exported == 7 })
	sizes := []int{}
	for _, b := range out.sent() {
		sizes = append(sizes, len(b))
	}
	if len(sizes) != 3 || sizes[0] != 3 || sizes[1] != 3 || sizes[2] != 1 {
		t.Fatalf("batch sizes %v, want [3 3 1]", sizes)
	}
}

func TestQueueShutdownFlushes(t *testing.T) {
	out := &fakeSender{}
	q, stats := newTestQueue(t, queueConfig{size: 100, maxBatch: 4, batchTimeout: time.Hour}, out)
	for i := range 10 {
		q.enqueue(queuedSpan(strconv.Itoa(i)))
	}
	if err := q.shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := stats.snapshot(); got.Exported != 10 || got.QueueLen != 0 {
		t.Fatalf("after shutdown: %+v", got)
	}
	if err := q.shutdown(context.Background()); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
	q.enqueue(queuedSpan("late"))
	if got := stats.snapshot(); got.Dropped != 1 {
		t.Fatalf("span after shutdown: %+v, want 1 dropped", got)
	}
	if out.shutdowns != 1 {
		t.Fatalf("sender shut down %d times", out.shutdowns)
	}
}

func TestQueueShutdownDeadline(t *testing.T) {
	out := &fakeSender{gate: make(chan struct{}), calls: make(chan int, 10)}
	q, stats := newTestQueue(t, queueConfig{size: 100, maxBatch: 2, batchTimeout: time.Hour}, out)
	for i := range 7 {
		q.enqueue(queuedSpan(strconv.Itoa(i)))
	}
	<-out.calls

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := q.shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("shutdown error = %v, want deadline exceeded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("shutdown took %v", d)
	}
	// The batch in flight failed; the rest was never attempted.
	if got := stats.snapshot(); got.Failed != 2 || got.Dropped != 5 || got.QueueLen != 0 {
		t.Fatalf("got %+v, want 2 failed, 5 dropped", got)
	}
}
