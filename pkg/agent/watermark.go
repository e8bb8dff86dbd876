package agent

import (
	"sync"
	"time"

	"github.com/weftdev/weft/pkg/correlate"
)

// watermark is a CLOCK_MONOTONIC time before which every CPU sample has
// been read from the kernel. Spans wait for it to pass their end, so that
// whether they got samples is known when they are exported.
type watermark struct {
	mu sync.Mutex
	at uint64
	ch chan struct{} // closed, and replaced, when at moves
}

func newWatermark() *watermark { return &watermark{ch: make(chan struct{})} }

// advance moves the mark forward to t (never back) and wakes the waiters.
func (w *watermark) advance(t uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t <= w.at {
		return
	}
	w.at = t
	close(w.ch)
	w.ch = make(chan struct{})
}

// reached reports whether the mark is at or past t, and otherwise gives a
// channel closed at the next move.
func (w *watermark) reached(t uint64) (bool, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at >= t, w.ch
}

// get is the mark.
func (w *watermark) get() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.at
}

// monoNow is CLOCK_MONOTONIC in nanoseconds, the clock of the kernel's
// sample timestamps, read through Go's own monotonic clock (the same
// clock, through the vDSO): correlate.Monotonic is a system call, too
// dear for every span.
func monoNow() uint64 { return monoBase + uint64(time.Since(timeBase)) }

var monoBase, timeBase = correlate.Monotonic(), time.Now()
