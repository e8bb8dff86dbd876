package profiler

import (
	"fmt"
	"strings"

	"github.com/google/pprof/profile"
)

// Selector picks samples by the span they were taken in. Empty fields
// match anything; ids are hex as in the labels, or NoSpan for samples
// outside any span.
type Selector struct {
	TraceID  string
	SpanID   string
	SpanName string
}

// BySpan selects one span's samples.
func BySpan(spanID string) Selector { return Selector{SpanID: spanID} }

// ByTrace selects the samples of every span of one trace.
func ByTrace(traceID string) Selector { return Selector{TraceID: traceID} }

// BySpanName selects the samples of every span of one name, such as all
// "GET /users/{id}" requests.
func BySpanName(name string) Selector { return Selector{SpanName: name} }

// String describes the selection, for titles.
func (s Selector) String() string {
	var parts []string
	if s.TraceID != "" {
		parts = append(parts, "trace "+s.TraceID)
	}
	if s.SpanID != "" {
		parts = append(parts, "span "+s.SpanID)
	}
	if s.SpanName != "" {
		parts = append(parts, fmt.Sprintf("span name %q", s.SpanName))
	}
	if len(parts) == 0 {
		return "all samples"
	}
	return strings.Join(parts, ", ")
}

func (s Selector) matches(sm *profile.Sample) bool {
	return labelIs(sm, LabelTraceID, strings.ToLower(s.TraceID)) &&
		labelIs(sm, LabelSpanID, strings.ToLower(s.SpanID)) &&
		labelIs(sm, LabelSpanName, s.SpanName)
}

func labelIs(sm *profile.Sample, key, want string) bool {
	if want == "" {
		return true
	}
	for _, v := range sm.Label[key] {
		if v == want {
			return true
		}
	}
	return false
}

// Filter returns a copy of p with only the selected samples, and only the
// locations, functions and mappings they use. p is not changed.
func Filter(p *profile.Profile, sel Selector) *profile.Profile {
	out := p.Copy()
	kept := out.Sample[:0]
	for _, sm := range out.Sample {
		if sel.matches(sm) {
			kept = append(kept, sm)
		}
	}
	out.Sample = kept
	return out.Compact()
}

// AggregateSpans returns a copy of p without the trace_id and span_id
// labels, so that samples of different spans with the same name, stack
// and thread become one: the profile of a span name rather than of each
// span. p is not changed.
func AggregateSpans(p *profile.Profile) *profile.Profile {
	out := p.Copy()
	for _, sm := range out.Sample {
		delete(sm.Label, LabelTraceID)
		delete(sm.Label, LabelSpanID)
	}
	return out.Compact()
}
