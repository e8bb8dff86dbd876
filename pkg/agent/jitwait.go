package agent

import (
	"time"

	"github.com/weftdev/weft/pkg/profiler"
)

// Samples with unnamed JIT frames wait for their JVM's new perf map at
// most this long, and at most this many wait at once; past either they
// are counted as they are.
const (
	jitHoldFor = 10 * time.Second
	jitMaxHeld = 4096
)

// jitWait holds the samples of JVMs whose perf map is being refreshed.
// Only the aggregating goroutine uses it.
type jitWait struct {
	syms  *perfMapRefresher
	agg   *profiler.Aggregator
	held  map[uint32]*heldSamples
	count int
}

type heldSamples struct {
	since   time.Time
	samples []*profiler.RawSample
}

func newJITWait(syms *perfMapRefresher, agg *profiler.Aggregator) *jitWait {
	return &jitWait{syms: syms, agg: agg, held: map[uint32]*heldSamples{}}
}

// add symbolises s and counts it, or holds it while its JVM writes a perf
// map that should name its JIT frames.
func (w *jitWait) add(s *profiler.RawSample, now time.Time) {
	frames, hold := w.syms.symbolize(s.PID, s.UserStack, s.KernelStack)
	if !hold || w.count >= jitMaxHeld {
		w.agg.AddFrames(s, frames)
		return
	}
	h, ok := w.held[s.PID]
	if !ok {
		h = &heldSamples{since: now}
		w.held[s.PID] = h
	}
	h.samples = append(h.samples, s)
	w.count++
}

// release counts pid's held samples, symbolised again, and tells the
// refresher whether its dump named them.
func (w *jitWait) release(pid uint32) {
	h, ok := w.held[pid]
	if !ok {
		return
	}
	delete(w.held, pid)
	w.count -= len(h.samples)
	named := 0
	for _, s := range h.samples {
		frames := w.syms.Symbolize(s.PID, s.UserStack, s.KernelStack)
		if !unnamedJIT(frames) {
			named++
		}
		w.agg.AddFrames(s, frames)
	}
	w.syms.report(pid, 2*named >= len(h.samples))
}

// expire releases what waited too long (a dump that never ends).
func (w *jitWait) expire(now time.Time) {
	for pid, h := range w.held {
		if now.Sub(h.since) >= jitHoldFor {
			w.release(pid)
		}
	}
}

// releaseAll counts everything held, before a last flush.
func (w *jitWait) releaseAll() {
	for pid := range w.held {
		w.release(pid)
	}
}
