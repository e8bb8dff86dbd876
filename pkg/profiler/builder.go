package profiler

import (
	"encoding/binary"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/profiler/symbolize"
	"github.com/weftdev/weft/pkg/spans"
)

// Mapping names of frames without a file, as they appear in profiles.
// pprof leaves names in brackets alone instead of trying to symbolise
// them again.
const (
	MappingKernel  = symbolize.ModuleKernel // every kernel frame, modules too
	MappingJIT     = "[jit]"                // frames named by a perf map
	MappingUnknown = "[unknown]"            // the process's mappings were unknown
)

// noStackName stands for the stack of a sample that has none, so its CPU
// time still shows.
const noStackName = "[no stack]"

// builder accumulates one service's samples for one interval. Locations
// and functions are interned as samples arrive; labels are made at the
// end, when span names are known.
type builder struct {
	mappings  map[string]*profile.Mapping
	functions map[funcKey]*profile.Function
	locations map[locKey]*profile.Location
	stacks    map[string]*stack
	order     []*stack // first-seen order, which keeps output deterministic

	mappingList  []*profile.Mapping
	functionList []*profile.Function
	locationList []*profile.Location
	key          strings.Builder
}

type funcKey struct{ name, file string }

type locKey struct {
	mapping string
	addr    uint64
	fn      funcKey
	line    int
}

// stack is one distinct (stack, span, thread, process) and its count.
type stack struct {
	locs     []*profile.Location
	trace    spans.TraceID
	span     spans.SpanID
	thread   string
	pid, tid uint32
	count    int64
}

func newBuilder() *builder {
	return &builder{
		mappings:  map[string]*profile.Mapping{},
		functions: map[funcKey]*profile.Function{},
		locations: map[locKey]*profile.Location{},
		stacks:    map[string]*stack{},
	}
}

// add counts one sample and reports whether it started a new stack. With
// mayGrow false a sample that would start one is not counted (ok false).
func (b *builder) add(frames []symbolize.Frame, s *RawSample, mayGrow bool) (grew, ok bool) {
	if len(frames) == 0 {
		frames = []symbolize.Frame{{Function: noStackName, Module: MappingUnknown}}
	}
	locs := make([]*profile.Location, len(frames))
	for i := range frames {
		locs[i] = b.location(&frames[i])
	}

	b.key.Reset()
	var buf [8]byte
	for _, l := range locs {
		binary.LittleEndian.PutUint64(buf[:], l.ID)
		b.key.Write(buf[:])
	}
	b.key.Write(s.TraceID[:])
	b.key.Write(s.SpanID[:])
	binary.LittleEndian.PutUint32(buf[:4], s.PID)
	binary.LittleEndian.PutUint32(buf[4:], s.TID)
	b.key.Write(buf[:])
	b.key.WriteString(s.Thread)
	key := b.key.String()

	if st, ok := b.stacks[key]; ok {
		st.count++
		return false, true
	}
	if !mayGrow {
		return false, false
	}
	st := &stack{locs: locs, trace: s.TraceID, span: s.SpanID, thread: s.Thread, pid: s.PID, tid: s.TID, count: 1}
	b.stacks[key] = st
	b.order = append(b.order, st)
	return true, true
}

func (b *builder) location(f *symbolize.Frame) *profile.Location {
	mapping, addr := frameMapping(f)
	fk := funcKey{name: f.Name(), file: f.File}
	k := locKey{mapping: mapping, addr: addr, fn: fk, line: f.Line}
	if l, ok := b.locations[k]; ok {
		return l
	}
	l := &profile.Location{
		ID:      uint64(len(b.locationList) + 1),
		Mapping: b.mapping(mapping),
		Address: addr,
		Line:    []profile.Line{{Function: b.function(fk), Line: int64(f.Line)}},
	}
	b.locations[k] = l
	b.locationList = append(b.locationList, l)
	return l
}

// frameMapping names a frame's mapping and the address to record in it.
// Code in files gets its address in the file (the ELF virtual address),
// which is the same in every process that maps it, so one location
// serves them all.
func frameMapping(f *symbolize.Frame) (string, uint64) {
	switch {
	case f.Kind == symbolize.KindKernel:
		return MappingKernel, f.Address
	case f.Kind == symbolize.KindJIT:
		return MappingJIT, f.Address
	case f.Module == "":
		return MappingUnknown, f.Address
	case strings.HasPrefix(f.Module, "/") || f.Module == "[vdso]":
		return f.Module, f.Offset
	default: // anonymous and special mappings: only the address means anything
		return f.Module, f.Address
	}
}

func (b *builder) mapping(file string) *profile.Mapping {
	if m, ok := b.mappings[file]; ok {
		return m
	}
	// Addresses are already file-relative and every location carries its
	// function, so the mapping only names the file; the flags stop pprof
	// from symbolising it again.
	m := &profile.Mapping{
		ID:              uint64(len(b.mappingList) + 1),
		File:            file,
		HasFunctions:    true,
		HasFilenames:    true,
		HasLineNumbers:  true,
		HasInlineFrames: true,
	}
	b.mappings[file] = m
	b.mappingList = append(b.mappingList, m)
	return m
}

func (b *builder) function(k funcKey) *profile.Function {
	if fn, ok := b.functions[k]; ok {
		return fn
	}
	fn := &profile.Function{ID: uint64(len(b.functionList) + 1), Name: k.name, SystemName: k.name, Filename: k.file}
	b.functions[k] = fn
	b.functionList = append(b.functionList, fn)
	return fn
}

// spanNamer names spans; results are cached for one profile.
type spanNamer func(spans.TraceID, spans.SpanID) string

// interval is what every profile of one flush shares.
type interval struct {
	start, duration int64 // ns
	period          int64 // ns of CPU time one sample stands for
}

// profile turns the counts into a pprof profile.
func (b *builder) profile(iv interval, name spanNamer) *profile.Profile {
	p := &profile.Profile{
		SampleType: []*profile.ValueType{
			{Type: "samples", Unit: "count"},
			{Type: "cpu", Unit: "nanoseconds"},
		},
		DefaultSampleType: "cpu",
		PeriodType:        &profile.ValueType{Type: "cpu", Unit: "nanoseconds"},
		Period:            iv.period,
		TimeNanos:         iv.start,
		DurationNanos:     iv.duration,
		Mapping:           b.mappingList,
		Function:          b.functionList,
		Location:          b.locationList,
	}
	names := map[spans.SpanID]string{}
	for _, st := range b.order {
		labels := map[string][]string{
			LabelTraceID: {traceLabel(st.trace)},
			LabelSpanID:  {spanLabel(st.span)},
		}
		if st.span.IsValid() && name != nil {
			n, ok := names[st.span]
			if !ok {
				n = name(st.trace, st.span)
				names[st.span] = n
			}
			if n != "" {
				labels[LabelSpanName] = []string{n}
			}
		}
		if st.thread != "" {
			labels[LabelThread] = []string{st.thread}
		}
		p.Sample = append(p.Sample, &profile.Sample{
			Location: st.locs,
			Value:    []int64{st.count, st.count * iv.period},
			Label:    labels,
			NumLabel: map[string][]int64{LabelPID: {int64(st.pid)}, LabelTID: {int64(st.tid)}},
		})
	}
	return p
}
