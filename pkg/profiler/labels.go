package profiler

import "github.com/weftdev/weft/pkg/spans"

// Label keys on every pprof sample.
const (
	LabelTraceID  = "trace_id"  // 32 hex digits, or NoSpan
	LabelSpanID   = "span_id"   // 16 hex digits, or NoSpan
	LabelSpanName = "span_name" // absent when unknown or outside spans
	LabelThread   = "thread"    // absent when unknown
	LabelPID      = "pid"       // numeric label
	// LabelTID is the thread (numeric label): it shows a request that
	// moved between threads, such as a coroutine, within one span.
	LabelTID = "tid"
)

// NoSpan is the trace_id and span_id of samples taken outside any span.
// They are kept and labelled rather than left unlabelled so that they can
// be selected like any span: `pprof -tagfocus span_id=none`.
const NoSpan = "none"

func traceLabel(t spans.TraceID) string {
	if !t.IsValid() {
		return NoSpan
	}
	return t.String()
}

func spanLabel(s spans.SpanID) string {
	if !s.IsValid() {
		return NoSpan
	}
	return s.String()
}
