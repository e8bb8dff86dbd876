// Package profiler is the user-space half of weft's CPU profiler:
// everything after a raw stack sample arrived from perf_event + BPF.
//
// An Aggregator symbolises samples as they come (package symbolize),
// counts them per service, stack and span, and on Flush hands out one
// pprof profile per service whose samples carry the trace_id, span_id,
// span_name and thread they were taken in. Filter narrows a profile to
// one trace, span or span name, and WriteFlameGraph draws it as a
// self-contained SVG a person can open in a browser.
package profiler
