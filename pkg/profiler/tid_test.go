package profiler

import (
	"slices"
	"testing"
)

// The same stack of one span on two threads stays two samples, each with
// its thread id: a request that moved between threads shows it.
func TestSamplesKeepTheirThread(t *testing.T) {
	agg, err := NewAggregator(Config{Symbolizer: fakeSymbolizer{}, SampleRate: 100})
	if err != nil {
		t.Fatal(err)
	}
	span := mustSpan("00f067aa0ba902b7")
	for _, tid := range []uint32{11, 12, 12} {
		agg.Add(&RawSample{PID: 10, TID: tid, SpanID: span, UserStack: []uint64{0x401000}})
	}
	p := agg.Flush()[DefaultService]
	if len(p.Sample) != 2 {
		t.Fatalf("%d samples, want one per thread", len(p.Sample))
	}
	for i, want := range []struct{ tid, n int64 }{{11, 1}, {12, 2}} {
		s := p.Sample[i]
		if !slices.Equal(s.NumLabel[LabelTID], []int64{want.tid}) || s.Value[0] != want.n {
			t.Errorf("sample %d: tid %v count %d, want %v", i, s.NumLabel[LabelTID], s.Value[0], want)
		}
	}
}

// AddFrames counts frames symbolised elsewhere exactly as Add would.
func TestAddFramesMatchesAdd(t *testing.T) {
	syms := fakeSymbolizer{}
	a1, _ := NewAggregator(Config{Symbolizer: syms, SampleRate: 100})
	a2, _ := NewAggregator(Config{Symbolizer: syms, SampleRate: 100})
	s := &RawSample{PID: 1, TID: 2, UserStack: []uint64{0x401000, 0x402000}}
	a1.Add(s)
	a2.AddFrames(s, syms.Symbolize(s.PID, s.UserStack, s.KernelStack))
	p1, p2 := a1.Flush()[DefaultService], a2.Flush()[DefaultService]
	if len(p1.Sample) != 1 || len(p2.Sample) != 1 || len(p1.Sample[0].Location) != len(p2.Sample[0].Location) {
		t.Fatalf("Add %v, AddFrames %v", p1.Sample, p2.Sample)
	}
}
