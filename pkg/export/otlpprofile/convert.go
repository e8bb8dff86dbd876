// Package otlpprofile sends weft's CPU profiles as OTLP profiles (the
// development signal, go.opentelemetry.io/collector/pdata/pprofile) over
// gRPC or OTLP/HTTP: one resource per process, as its spans have, and each
// sample linked to the trace and span it was taken in.
package otlpprofile

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/google/pprof/profile"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/weftdev/weft/pkg/profiler"
)

// ScopeName is the instrumentation scope of the profiles.
const ScopeName = "github.com/weftdev/weft/profiler"

// Resolver gives the resource of a process, the one its spans carry
// (*procinfo.Resolver).
type Resolver interface {
	Resolve(pid uint32) (*resource.Resource, string)
}

// Builder gathers pprof profiles into one OTLP request. Its tables (the
// request's dictionary) are shared by every profile added.
type Builder struct {
	out      pprofile.Profiles
	dict     pprofile.ProfilesDictionary
	version  string
	strings  map[string]int32
	funcs    map[funcKey]int32
	maps     map[string]int32
	locs     map[locKey]int32
	stacks   map[string]int32
	links    map[linkKey]int32
	attrs    map[attrKey]int32
	stackKey []byte
}

type funcKey struct {
	name, system, file string
	start              int64
}

type locKey struct {
	mapping int32
	addr    uint64
	fn      int32
	line    int64
}

type linkKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

type attrKey struct {
	key   string
	str   string
	num   int64
	isNum bool
}

// NewBuilder starts an empty request; version is the scope's.
func NewBuilder(version string) *Builder {
	b := &Builder{
		out:     pprofile.NewProfiles(),
		version: version,
		strings: map[string]int32{},
		funcs:   map[funcKey]int32{},
		maps:    map[string]int32{},
		locs:    map[locKey]int32{},
		stacks:  map[string]int32{},
		links:   map[linkKey]int32{},
		attrs:   map[attrKey]int32{},
	}
	b.dict = b.out.Dictionary()
	// Index 0 of every table is its zero value, which "none" refers to.
	b.str("")
	b.dict.MappingTable().AppendEmpty()
	b.dict.LocationTable().AppendEmpty()
	b.dict.FunctionTable().AppendEmpty()
	b.dict.LinkTable().AppendEmpty()
	b.dict.AttributeTable().AppendEmpty()
	b.dict.StackTable().AppendEmpty()
	return b
}

// Profiles is the request built so far.
func (b *Builder) Profiles() pprofile.Profiles { return b.out }

// Add converts one service's pprof profile, as weft writes them: samples
// are split by their pid label, one resource per process.
func (b *Builder) Add(p *profile.Profile, r Resolver) error {
	byPID := map[int64][]*profile.Sample{}
	var pids []int64
	for _, s := range p.Sample {
		pid := int64(-1)
		if v := s.NumLabel[profiler.LabelPID]; len(v) == 1 {
			pid = v[0]
		}
		if _, ok := byPID[pid]; !ok {
			pids = append(pids, pid)
		}
		byPID[pid] = append(byPID[pid], s)
	}
	slices.Sort(pids)
	countIdx, ok := sampleIndex(p, "samples")
	if !ok {
		return fmt.Errorf("profile has no samples/count values")
	}
	for _, pid := range pids {
		rp := b.out.ResourceProfiles().AppendEmpty()
		if pid >= 0 && r != nil {
			res, _ := r.Resolve(uint32(pid))
			putResource(rp.Resource().Attributes(), res)
			if res != nil {
				rp.SetSchemaUrl(res.SchemaURL())
			}
		}
		sp := rp.ScopeProfiles().AppendEmpty()
		sp.Scope().SetName(ScopeName)
		sp.Scope().SetVersion(b.version)
		op := sp.Profiles().AppendEmpty()
		if err := b.fill(op, p, byPID[pid], countIdx); err != nil {
			return err
		}
	}
	return nil
}

func sampleIndex(p *profile.Profile, typ string) (int, bool) {
	for i, st := range p.SampleType {
		if st.Type == typ {
			return i, true
		}
	}
	return 0, false
}

// fill makes op the profile of samples: sample counts, a sample standing
// for p.Period ns of CPU, as the OpenTelemetry eBPF profiler reports.
func (b *Builder) fill(op pprofile.Profile, p *profile.Profile, samples []*profile.Sample, countIdx int) error {
	var id pprofile.ProfileID
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("profile id: %w", err)
	}
	op.SetProfileID(id)
	op.SetTime(pcommon.Timestamp(p.TimeNanos))
	op.SetDurationNano(uint64(max(p.DurationNanos, 0)))
	op.SampleType().SetTypeStrindex(b.str("samples"))
	op.SampleType().SetUnitStrindex(b.str("count"))
	op.PeriodType().SetTypeStrindex(b.str("cpu"))
	op.PeriodType().SetUnitStrindex(b.str("nanoseconds"))
	op.SetPeriod(p.Period)
	for _, s := range samples {
		os := op.Samples().AppendEmpty()
		os.SetStackIndex(b.stack(s.Location))
		os.Values().Append(s.Value[countIdx])
		os.SetLinkIndex(b.link(s))
		if v := s.Label[profiler.LabelThread]; len(v) == 1 {
			os.AttributeIndices().Append(b.attr(attrKey{key: "thread.name", str: v[0]}))
		}
		if v := s.NumLabel[profiler.LabelTID]; len(v) == 1 {
			os.AttributeIndices().Append(b.attr(attrKey{key: "thread.id", num: v[0], isNum: true}))
		}
		if v := s.Label[profiler.LabelSpanName]; len(v) == 1 {
			// Not a semantic convention (yet): the name of the linked span,
			// for a backend that shows names without looking spans up.
			os.AttributeIndices().Append(b.attr(attrKey{key: "weft.span.name", str: v[0]}))
		}
	}
	return nil
}

func (b *Builder) str(s string) int32 {
	if i, ok := b.strings[s]; ok {
		return i
	}
	i := int32(b.dict.StringTable().Len())
	b.dict.StringTable().Append(s)
	b.strings[s] = i
	return i
}

func (b *Builder) link(s *profile.Sample) int32 {
	var trace pcommon.TraceID
	var span pcommon.SpanID
	if !decodeID(trace[:], s.Label[profiler.LabelTraceID]) || !decodeID(span[:], s.Label[profiler.LabelSpanID]) {
		return 0 // outside any span
	}
	k := linkKey{trace, span}
	if i, ok := b.links[k]; ok {
		return i
	}
	l := b.dict.LinkTable().AppendEmpty()
	l.SetTraceID(trace)
	l.SetSpanID(span)
	i := int32(b.dict.LinkTable().Len() - 1)
	b.links[k] = i
	return i
}

// decodeID reads a hex id label into dst; "none", malformed and all-zero
// values are no id.
func decodeID(dst []byte, v []string) bool {
	if len(v) != 1 || len(v[0]) != 2*len(dst) {
		return false
	}
	if _, err := hex.Decode(dst, []byte(v[0])); err != nil {
		return false
	}
	return slices.ContainsFunc(dst, func(c byte) bool { return c != 0 })
}

func (b *Builder) attr(k attrKey) int32 {
	if i, ok := b.attrs[k]; ok {
		return i
	}
	a := b.dict.AttributeTable().AppendEmpty()
	a.SetKeyStrindex(b.str(k.key))
	if k.isNum {
		a.Value().SetInt(k.num)
	} else {
		a.Value().SetStr(k.str)
	}
	i := int32(b.dict.AttributeTable().Len() - 1)
	b.attrs[k] = i
	return i
}

func (b *Builder) stack(locs []*profile.Location) int32 {
	idx := make([]int32, 0, len(locs))
	b.stackKey = b.stackKey[:0]
	for _, l := range locs {
		// pprof puts inlined calls of one address in one location; OTLP
		// keeps them the same way (several lines, innermost first).
		i := b.location(l)
		idx = append(idx, i)
		b.stackKey = fmt.Appendf(b.stackKey, "%d,", i)
	}
	if i, ok := b.stacks[string(b.stackKey)]; ok {
		return i
	}
	st := b.dict.StackTable().AppendEmpty()
	st.LocationIndices().FromRaw(idx) // leaf first, as in pprof
	i := int32(b.dict.StackTable().Len() - 1)
	b.stacks[string(b.stackKey)] = i
	return i
}

func (b *Builder) location(l *profile.Location) int32 {
	var mi int32
	if l.Mapping != nil {
		mi = b.mapping(l.Mapping.File)
	}
	var fn int32
	var line int64
	if len(l.Line) > 0 {
		fn = b.function(l.Line[0].Function)
		line = l.Line[0].Line
	}
	k := locKey{mapping: mi, addr: l.Address, fn: fn, line: line}
	if i, ok := b.locs[k]; ok {
		return i
	}
	ol := b.dict.LocationTable().AppendEmpty()
	ol.SetMappingIndex(mi)
	ol.SetAddress(l.Address)
	for _, ln := range l.Line {
		x := ol.Lines().AppendEmpty()
		x.SetFunctionIndex(b.function(ln.Function))
		x.SetLine(ln.Line)
	}
	i := int32(b.dict.LocationTable().Len() - 1)
	b.locs[k] = i
	return i
}

func (b *Builder) mapping(file string) int32 {
	if i, ok := b.maps[file]; ok {
		return i
	}
	m := b.dict.MappingTable().AppendEmpty()
	m.SetFilenameStrindex(b.str(file))
	i := int32(b.dict.MappingTable().Len() - 1)
	b.maps[file] = i
	return i
}

func (b *Builder) function(f *profile.Function) int32 {
	if f == nil {
		return 0
	}
	k := funcKey{name: f.Name, system: f.SystemName, file: f.Filename, start: f.StartLine}
	if i, ok := b.funcs[k]; ok {
		return i
	}
	of := b.dict.FunctionTable().AppendEmpty()
	of.SetNameStrindex(b.str(f.Name))
	of.SetSystemNameStrindex(b.str(f.SystemName))
	of.SetFilenameStrindex(b.str(f.Filename))
	of.SetStartLine(f.StartLine)
	i := int32(b.dict.FunctionTable().Len() - 1)
	b.funcs[k] = i
	return i
}

// putResource copies an SDK resource's attributes.
func putResource(dst pcommon.Map, res *resource.Resource) {
	if res == nil {
		return
	}
	for it := res.Iter(); it.Next(); {
		kv := it.Attribute()
		k := string(kv.Key)
		switch kv.Value.Type() {
		case attribute.BOOL:
			dst.PutBool(k, kv.Value.AsBool())
		case attribute.INT64:
			dst.PutInt(k, kv.Value.AsInt64())
		case attribute.FLOAT64:
			dst.PutDouble(k, kv.Value.AsFloat64())
		case attribute.STRING:
			dst.PutStr(k, kv.Value.AsString())
		case attribute.STRINGSLICE:
			s := dst.PutEmptySlice(k)
			for _, v := range kv.Value.AsStringSlice() {
				s.AppendEmpty().SetStr(v)
			}
		case attribute.INT64SLICE:
			s := dst.PutEmptySlice(k)
			for _, v := range kv.Value.AsInt64Slice() {
				s.AppendEmpty().SetInt(v)
			}
		default:
			dst.PutStr(k, kv.Value.Emit())
		}
	}
}
