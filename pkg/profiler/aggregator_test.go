package profiler

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

func TestAggregatorProfiles(t *testing.T) {
	profiles := testProfiles(t)
	if len(profiles) != 2 || profiles["checkout"] == nil || profiles["cart"] == nil {
		t.Fatalf("got profiles %v", profiles)
	}
	p := roundTrip(t, profiles["checkout"])
	if err := p.CheckValid(); err != nil {
		t.Fatal(err)
	}

	if len(p.SampleType) != 2 || p.SampleType[0].Type != "samples" || p.SampleType[0].Unit != "count" ||
		p.SampleType[1].Type != "cpu" || p.SampleType[1].Unit != "nanoseconds" {
		t.Fatalf("sample types %v %v", p.SampleType[0], p.SampleType[1])
	}
	if p.Period != 10_000_000 || p.PeriodType.Type != "cpu" {
		t.Errorf("period %d %v", p.Period, p.PeriodType)
	}
	if p.DurationNanos != int64(10*time.Second) {
		t.Errorf("duration %d", p.DurationNanos)
	}

	type want struct {
		stack          string
		count          int64
		trace, span    string
		spanName, thrd string
		pid            int64
	}
	wants := []want{
		{"main.compute;main.handleA;main.main", 3, "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", "GET /a", "server", 1},
		{"vfs_read;entry_SYSCALL_64;libc.so.6+0x1234;encoding/json.Marshal;main.handleB;main.main", 2, "4bf92f3577b34da6a3ce929d0e0e4736", "53995c3f42cd8ad8", "GET /b", "server", 1},
		{"runtime.gcBgMarkWorker", 1, NoSpan, NoSpan, "", "gc", 2},
	}
	if len(p.Sample) != len(wants) {
		t.Fatalf("got %d samples, want %d", len(p.Sample), len(wants))
	}
	for i, w := range wants {
		s := p.Sample[i]
		if got := strings.Join(stackNames(s), ";"); got != w.stack {
			t.Errorf("sample %d stack %s, want %s", i, got, w.stack)
		}
		if s.Value[0] != w.count || s.Value[1] != w.count*10_000_000 {
			t.Errorf("sample %d values %v", i, s.Value)
		}
		label := func(k string) string { return strings.Join(s.Label[k], ",") }
		if label(LabelTraceID) != w.trace || label(LabelSpanID) != w.span || label(LabelSpanName) != w.spanName || label(LabelThread) != w.thrd {
			t.Errorf("sample %d labels %v", i, s.Label)
		}
		if !slices.Equal(s.NumLabel[LabelPID], []int64{w.pid}) {
			t.Errorf("sample %d pid %v", i, s.NumLabel)
		}
	}

	// main.main appears in two stacks but is one location and function.
	var mains int
	for _, fn := range p.Function {
		if fn.Name == "main.main" {
			mains++
		}
	}
	if mains != 1 || len(p.Location) != 9 || len(p.Function) != 9 {
		t.Errorf("%d main.main functions, %d locations, %d functions", mains, len(p.Location), len(p.Function))
	}
	for _, l := range p.Location {
		name := l.Line[0].Function.Name
		kernel := l.Mapping.File == MappingKernel
		if kernel != (name == "vfs_read" || name == "entry_SYSCALL_64") {
			t.Errorf("%s in mapping %s", name, l.Mapping.File)
		}
		if name == "main.compute" && (l.Address != ipCompute || l.Mapping.File != "/app/server") {
			t.Errorf("main.compute location %#x in %s", l.Address, l.Mapping.File)
		}
	}
}

func TestAggregatorFlushStartsOver(t *testing.T) {
	agg, err := NewAggregator(Config{Symbolizer: fakeFrames, SampleRate: 99})
	if err != nil {
		t.Fatal(err)
	}
	s := testSamples()[0]
	agg.Add(&s)
	first := agg.Flush()
	if p := first[DefaultService]; p == nil || len(p.Sample) != 1 {
		t.Fatalf("first flush %v", first)
	}
	if p := first[DefaultService]; p.Period != 10101010 {
		t.Errorf("period %d", p.Period)
	}
	if second := agg.Flush(); len(second) != 0 {
		t.Fatalf("second flush %v", second)
	}
}

func TestAggregatorBounded(t *testing.T) {
	agg, err := NewAggregator(Config{Symbolizer: fakeFrames, SampleRate: 99, MaxStacks: 2})
	if err != nil {
		t.Fatal(err)
	}
	ss := testSamples()
	for i := range ss {
		agg.Add(&ss[i])
	}
	// Stacks A and B fit; gc and pid 3's are dropped, repeats of A and B
	// are still counted.
	if d := agg.Dropped(); d != 2 {
		t.Errorf("dropped %d, want 2", d)
	}
	var total int64
	for _, p := range agg.Flush() {
		for _, s := range p.Sample {
			total += s.Value[0]
		}
	}
	if total != 5 {
		t.Errorf("counted %d samples, want 5", total)
	}
}

func TestAggregatorEmptyStack(t *testing.T) {
	agg, err := NewAggregator(Config{Symbolizer: fakeFrames, SampleRate: 99})
	if err != nil {
		t.Fatal(err)
	}
	agg.Add(&RawSample{PID: 9, UserStack: []uint64{0, 0}})
	p := agg.Flush()[DefaultService]
	if len(p.Sample) != 1 || strings.Join(stackNames(p.Sample[0]), ";") != noStackName {
		t.Fatalf("got %v", p.Sample)
	}
}

func TestNewAggregatorErrors(t *testing.T) {
	if _, err := NewAggregator(Config{SampleRate: 99}); err == nil {
		t.Error("no symbolizer accepted")
	}
	if _, err := NewAggregator(Config{Symbolizer: fakeFrames}); err == nil {
		t.Error("zero sample rate accepted")
	}
}

func TestAggregatorConcurrent(t *testing.T) {
	agg, err := NewAggregator(Config{Symbolizer: fakeFrames, SampleRate: 99, Service: services})
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 4, 200
	var wg sync.WaitGroup
	counted := make(chan int64, rounds)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ss := testSamples()
			for i := 0; i < rounds; i++ {
				agg.Add(&ss[i%len(ss)])
				if w == 0 && i%50 == 0 {
					counted <- countAll(agg.Flush())
				}
			}
		}()
	}
	wg.Wait()
	close(counted)
	sum := countAll(agg.Flush())
	for n := range counted {
		sum += n
	}
	if sum != workers*rounds {
		t.Fatalf("counted %d samples, want %d", sum, workers*rounds)
	}
}

func countAll(ps map[string]*profile.Profile) int64 {
	var n int64
	for _, p := range ps {
		n += total(p)
	}
	return n
}
