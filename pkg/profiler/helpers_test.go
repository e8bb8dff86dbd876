package profiler

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/profiler/symbolize"
	"github.com/weftdev/weft/pkg/spans"
)

// fakeSymbolizer names each address from a table, like a symbolizer whose
// binaries are all readable.
type fakeSymbolizer map[uint64]symbolize.Frame

func (f fakeSymbolizer) Symbolize(pid uint32, user, kernel []uint64) []symbolize.Frame {
	var out []symbolize.Frame
	for _, st := range [][]uint64{kernel, user} {
		for _, ip := range st {
			if ip == 0 {
				break
			}
			fr, ok := f[ip]
			if !ok {
				fr = symbolize.Frame{Address: ip}
			}
			fr.Address = ip
			out = append(out, fr)
		}
	}
	return out
}

// Addresses of the fake program.
const (
	ipMain     = 0x401000
	ipHandleA  = 0x402000
	ipCompute  = 0x402100
	ipHandleB  = 0x403000
	ipEncode   = 0x403100
	ipGCWorker = 0x404000
	ipLibc     = 0x7f0000001234
	ipKRead    = 0xffffffff81002010
	ipKEntry   = 0xffffffff81000100
)

var fakeFrames = fakeSymbolizer{
	ipMain:     {Function: "main.main", File: "main.go", Line: 10, Module: "/app/server", Offset: ipMain},
	ipHandleA:  {Function: "main.handleA", File: "main.go", Line: 20, Module: "/app/server", Offset: ipHandleA},
	ipCompute:  {Function: "main.compute", File: "main.go", Line: 30, Module: "/app/server", Offset: ipCompute},
	ipHandleB:  {Function: "main.handleB", File: "main.go", Line: 40, Module: "/app/server", Offset: ipHandleB},
	ipEncode:   {Function: "encoding/json.Marshal", File: "encode.go", Line: 50, Module: "/app/server", Offset: ipEncode},
	ipGCWorker: {Function: "runtime.gcBgMarkWorker", File: "mgc.go", Line: 60, Module: "/app/server", Offset: ipGCWorker},
	ipLibc:     {Module: "/usr/lib/libc.so.6", Offset: 0x1234},
	ipKRead:    {Kind: symbolize.KindKernel, Function: "vfs_read", Module: symbolize.ModuleKernel},
	ipKEntry:   {Kind: symbolize.KindKernel, Function: "entry_SYSCALL_64", Module: symbolize.ModuleKernel},
}

var (
	traceOne = mustTrace("4bf92f3577b34da6a3ce929d0e0e4736")
	spanA    = mustSpan("00f067aa0ba902b7")
	spanB    = mustSpan("53995c3f42cd8ad8")
)

func mustTrace(s string) (t spans.TraceID) {
	if _, err := hex.Decode(t[:], []byte(s)); err != nil {
		panic(err)
	}
	return t
}

func mustSpan(s string) (id spans.SpanID) {
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		panic(err)
	}
	return id
}

// testSamples: span A computes, span B encodes and reads a file, and the
// GC works outside any span. Counts: A 3, B 2, none 1, plus 1 for pid 3.
func testSamples() []RawSample {
	a := RawSample{PID: 1, TID: 11, UserStack: []uint64{ipCompute, ipHandleA, ipMain}, TraceID: traceOne, SpanID: spanA, Thread: "server"}
	b := RawSample{PID: 1, TID: 12, UserStack: []uint64{ipLibc, ipEncode, ipHandleB, ipMain, 0, 0}, KernelStack: []uint64{ipKRead, ipKEntry}, TraceID: traceOne, SpanID: spanB, Thread: "server"}
	gc := RawSample{PID: 2, TID: 21, UserStack: []uint64{ipGCWorker}, Thread: "gc"}
	other := RawSample{PID: 3, TID: 31, UserStack: []uint64{ipMain}}
	return []RawSample{a, b, a, gc, b, a, other}
}

func spanNames(_ spans.TraceID, s spans.SpanID) string {
	switch s {
	case spanA:
		return "GET /a"
	case spanB:
		return "GET /b"
	}
	return ""
}

func services(pid uint32) string {
	if pid == 3 {
		return "cart"
	}
	return "checkout"
}

// testProfiles aggregates testSamples with the fake symbolizer.
func testProfiles(t *testing.T) map[string]*profile.Profile {
	t.Helper()
	now := time.Unix(1700000000, 0)
	agg, err := NewAggregator(Config{
		Symbolizer: fakeFrames,
		SampleRate: 100,
		Service:    services,
		SpanName:   spanNames,
		Now:        func() time.Time { now = now.Add(10 * time.Second); return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range testSamples() {
		agg.Add(&s)
	}
	return agg.Flush()
}

// roundTrip serialises p and parses it back, as a reader of the file would.
func roundTrip(t *testing.T, p *profile.Profile) *profile.Profile {
	t.Helper()
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	out, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stackNames returns a sample's function names, leaf first.
func stackNames(s *profile.Sample) []string {
	var out []string
	for _, l := range s.Location {
		for _, ln := range l.Line {
			out = append(out, ln.Function.Name)
		}
	}
	return out
}
