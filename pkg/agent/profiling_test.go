package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/config"
	"github.com/weftdev/weft/pkg/profiler"
	"github.com/weftdev/weft/pkg/profiler/store"
	"github.com/weftdev/weft/pkg/profiler/symbolize"
	"github.com/weftdev/weft/pkg/spans"
)

type namedFrames map[uint64]string

func (n namedFrames) Symbolize(_ uint32, user, _ []uint64) []symbolize.Frame {
	var out []symbolize.Frame
	for _, ip := range user {
		out = append(out, symbolize.Frame{Address: ip, Function: n[ip], Module: "/app"})
	}
	return out
}

// sinkRecorder is a profileSink keeping the services it was given.
type sinkRecorder struct{ services []string }

func (s *sinkRecorder) Export(_ context.Context, profiles map[string]*profile.Profile) error {
	for svc := range profiles {
		s.services = append(s.services, svc)
	}
	return nil
}

func (s *sinkRecorder) Shutdown(context.Context) error { return nil }

// Samples in, one pprof file per service out every interval and when the
// samples end, named spans labelled, old files pruned.
func TestAggregateLoopWritesProfiles(t *testing.T) {
	dir := t.TempDir()
	old, err := store.Write(dir, "stale", &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}}}, time.Now().Add(-48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	links := newSpanLinks()
	span := spans.SpanID{7: 1}
	links.markSampled(span)
	links.note(&spans.Span{SpanID: span, Name: "GET /burn"})
	agg, err := profiler.NewAggregator(profiler.Config{
		Symbolizer: namedFrames{1: "main.main", 2: "main.burn"},
		SampleRate: 99,
		Service: func(pid uint32) string {
			if pid == 10 {
				return "shop"
			}
			return "cart"
		},
		SpanName: links.name,
	})
	if err != nil {
		t.Fatal(err)
	}
	sink := &sinkRecorder{}
	p := &profiling{
		cfg:     config.Profile{Dir: dir, Interval: time.Hour, Retention: 24 * time.Hour},
		links:   links,
		syms:    newPerfMapRefresher(symbolize.New(symbolize.Options{})),
		agg:     agg,
		sink:    sink,
		log:     testLogger(),
		samples: make(chan *profiler.RawSample, 16),
		gone:    make(chan uint32, 4),
	}
	done := make(chan struct{})
	go func() { p.aggregateLoop(context.Background()); close(done) }()
	for range 3 {
		p.samples <- &profiler.RawSample{PID: 10, TID: 11, SpanID: span, TraceID: spans.TraceID{0: 1}, UserStack: []uint64{2, 1}, Thread: "shop"}
	}
	p.samples <- &profiler.RawSample{PID: 20, TID: 21, UserStack: []uint64{1}, Thread: "cart"}
	p.processGone(20)
	time.Sleep(1500 * time.Millisecond) // one housekeeping tick: prunes
	close(p.samples)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the aggregator did not stop when the samples ended")
	}

	if _, err := os.Stat(old); err == nil {
		t.Error("a file past retention was not deleted")
	}
	files, err := store.List(dir, time.Time{}, "")
	if err != nil || len(files) != 2 {
		t.Fatalf("files %v (%v), want one per service", files, err)
	}
	for _, f := range files {
		prof, err := store.Read(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(filepath.Dir(f.Path)) == "shop" {
			s := prof.Sample[0]
			if s.Value[0] != 3 || s.Label[profiler.LabelSpanName][0] != "GET /burn" || s.Label[profiler.LabelSpanID][0] != span.String() {
				t.Errorf("shop sample %v %v", s.Value, s.Label)
			}
		}
	}
	if len(sink.services) != 2 {
		t.Errorf("sink got %v", sink.services)
	}
	if m := p.filesWritten.Load(); m != 2 {
		t.Errorf("files_written %d", m)
	}
}

func testLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }
