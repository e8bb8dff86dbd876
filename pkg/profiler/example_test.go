package profiler_test

import (
	"log"
	"os"

	"github.com/weftdev/weft/pkg/profiler"
	"github.com/weftdev/weft/pkg/profiler/symbolize"
	"github.com/weftdev/weft/pkg/spans"
)

// Example shows the wiring: samples in, one profile per service out, and a
// flame graph of one span name.
func Example() {
	syms := symbolize.New(symbolize.Options{})
	agg, err := profiler.NewAggregator(profiler.Config{
		Symbolizer: syms,
		SampleRate: 99, // the perf_event frequency
		Service:    func(pid uint32) string { return "checkout" },
		SpanName:   func(spans.TraceID, spans.SpanID) string { return "GET /cart" },
	})
	if err != nil {
		log.Fatal(err)
	}

	// For each sample the BPF side reports:
	agg.Add(&profiler.RawSample{PID: uint32(os.Getpid()), UserStack: []uint64{0x401000}})
	// When a process exits: syms.Forget(pid).

	// Every interval:
	for service, prof := range agg.Flush() {
		f, err := os.CreateTemp("", service+"-*.svg")
		if err != nil {
			log.Fatal(err)
		}
		sel := profiler.BySpanName("GET /cart")
		if err := profiler.WriteFlameGraph(f, profiler.Filter(prof, sel), service+": "+sel.String()); err != nil {
			log.Fatal(err)
		}
		f.Close()
		os.Remove(f.Name())
	}
}
