package profiler

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/profiler/symbolize"
)

// Real call stacks of this test process, captured by runtime.Callers as
// the BPF side would sample them: return addresses, leaf first.

//go:noinline
func e2eCapture() []uint64 {
	pcs := make([]uintptr, MaxStackDepth)
	pcs = pcs[:runtime.Callers(1, pcs)]
	out := make([]uint64, len(pcs))
	for i, pc := range pcs {
		out[i] = uint64(pc)
	}
	return out
}

//go:noinline
func e2eComputeA() []uint64 { return e2eCapture() }

//go:noinline
func e2eHandlerA() []uint64 { return e2eComputeA() }

//go:noinline
func e2eEncodeB() []uint64 { return e2eCapture() }

//go:noinline
func e2eHandlerB() []uint64 { return e2eEncodeB() }

// TestEndToEnd runs real stacks through the real symbolizer, the
// aggregator, a span filter and the flame graph.
func TestEndToEnd(t *testing.T) {
	agg, err := NewAggregator(Config{
		Symbolizer: symbolize.New(symbolize.Options{}),
		SampleRate: 99,
		Service:    func(uint32) string { return "self" },
		SpanName:   spanNames,
	})
	if err != nil {
		t.Fatal(err)
	}
	pid := uint32(os.Getpid())
	stackA, stackB := e2eHandlerA(), e2eHandlerB()
	for i := 0; i < 30; i++ {
		agg.Add(&RawSample{PID: pid, UserStack: stackA, TraceID: traceOne, SpanID: spanA, Thread: "e2e"})
	}
	for i := 0; i < 10; i++ {
		agg.Add(&RawSample{PID: pid, UserStack: stackB, TraceID: traceOne, SpanID: spanB, Thread: "e2e"})
	}
	p := roundTrip(t, agg.Flush()["self"])

	const pkg = "github.com/weftdev/weft/pkg/profiler."
	onlyA := functionNames(Filter(p, BySpanName("GET /a")))
	if !onlyA[pkg+"e2eComputeA"] || !onlyA[pkg+"e2eHandlerA"] || !onlyA[pkg+"TestEndToEnd"] || onlyA[pkg+"e2eEncodeB"] {
		t.Fatalf("span A functions: %v", onlyA)
	}

	var svg bytes.Buffer
	if err := WriteFlameGraph(&svg, Filter(p, BySpan(spanB.String())), "self: span B"); err != nil {
		t.Fatal(err)
	}
	frames := frameTitles(parseSVG(t, svg.Bytes()))
	var sawEncode bool
	for title := range frames {
		sawEncode = sawEncode || strings.HasPrefix(title, pkg+"e2eEncodeB (10 samples, 100.00%)")
		if strings.Contains(title, "e2eComputeA") {
			t.Errorf("span B graph shows %s", title)
		}
	}
	if !sawEncode {
		t.Errorf("no e2eEncodeB frame in %v", frames)
	}
}
