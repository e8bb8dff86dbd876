package profiler

import "github.com/weftdev/weft/pkg/spans"

// MaxStackDepth is the most frames the BPF side records per stack.
const MaxStackDepth = 127

// RawSample is one on-CPU stack sample as the kernel reported it. CPU and
// Time are carried for callers; profiles cover a whole interval and do
// not use them.
type RawSample struct {
	PID, TID uint32
	CPU      uint32
	// Time is CLOCK_MONOTONIC nanoseconds.
	Time uint64
	// UserStack and KernelStack hold up to MaxStackDepth instruction
	// pointers each, leaf first; a zero ends a stack early.
	UserStack   []uint64
	KernelStack []uint64
	// TraceID and SpanID name the span the thread worked for; both are
	// zero outside any span.
	TraceID spans.TraceID
	SpanID  spans.SpanID
	// Thread is the thread's name (comm), if known.
	Thread string
}

// InSpan reports whether the sample was taken while its thread worked for
// a span.
func (s *RawSample) InSpan() bool { return s.SpanID.IsValid() }
