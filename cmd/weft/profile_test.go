package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"

	"github.com/weftdev/weft/pkg/profiler"
	"github.com/weftdev/weft/pkg/profiler/store"
	"github.com/weftdev/weft/pkg/profiler/symbolize"
	"github.com/weftdev/weft/pkg/spans"
)

// fakeSymbols names every user address after its value.
type fakeSymbols map[uint64]string

func (f fakeSymbols) Symbolize(_ uint32, user, _ []uint64) []symbolize.Frame {
	var out []symbolize.Frame
	for _, ip := range user {
		out = append(out, symbolize.Frame{Address: ip, Function: f[ip], Module: "/srv/app"})
	}
	return out
}

var (
	spanA  = spans.SpanID{0, 0, 0, 0, 0, 0, 0, 0xa}
	spanB  = spans.SpanID{0, 0, 0, 0, 0, 0, 0, 0xb}
	traceT = spans.TraceID{15: 1}
)

// writeProfiles stores two intervals of one service: span A burns in
// hotA across both, span B in hotB, and some samples are outside spans.
func writeProfiles(t *testing.T, dir string) {
	t.Helper()
	syms := fakeSymbols{1: "main.main", 2: "main.hotA", 3: "main.hotB", 4: "runtime.gcBgMarkWorker"}
	names := map[spans.SpanID]string{spanA: "GET /a", spanB: "GET /b"}
	agg, err := profiler.NewAggregator(profiler.Config{
		Symbolizer: syms, SampleRate: 99,
		Service:  func(uint32) string { return "shop" },
		SpanName: func(_ spans.TraceID, s spans.SpanID) string { return names[s] },
	})
	if err != nil {
		t.Fatal(err)
	}
	add := func(n int, span spans.SpanID, stack ...uint64) {
		for range n {
			s := &profiler.RawSample{PID: 42, TID: 43, UserStack: stack, Thread: "app"}
			if span.IsValid() {
				s.SpanID, s.TraceID = span, traceT
			}
			agg.Add(s)
		}
	}
	end := time.Now().Add(-time.Minute)
	add(5, spanA, 2, 1)
	add(2, spans.SpanID{}, 4)
	for _, p := range agg.Flush() {
		if _, err := store.Write(dir, "shop", p, end); err != nil {
			t.Fatal(err)
		}
	}
	add(4, spanA, 2, 1)
	add(3, spanB, 3, 1)
	for _, p := range agg.Flush() {
		if _, err := store.Write(dir, "shop", p, end.Add(30*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
}

func runProfile(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	var out strings.Builder
	err := profileRun(&out, func(string) string { return "" }, append([]string{"--dir", dir}, args...))
	return out.String(), err
}

func readPprof(t *testing.T, path string) *profile.Profile {
	t.Helper()
	p, err := store.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProfileBySpan(t *testing.T) {
	dir := t.TempDir()
	writeProfiles(t, dir)
	prefix := filepath.Join(t.TempDir(), "a")
	out, err := runProfile(t, dir, "--span", spanA.String(), "--out", prefix)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, prefix+".svg") || !strings.Contains(out, prefix+".pb.gz") || !strings.Contains(out, "samples      9 ") {
		t.Errorf("output:\n%s", out)
	}
	svg, err := os.ReadFile(prefix + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "main.hotA") || strings.Contains(string(svg), "main.hotB") {
		t.Errorf("flame graph of span A should show hotA only")
	}
	p := readPprof(t, prefix+".pb.gz")
	var n int64
	for _, s := range p.Sample {
		n += s.Value[0]
		if s.Label[profiler.LabelSpanID][0] != spanA.String() || s.Label[profiler.LabelSpanName][0] != "GET /a" {
			t.Errorf("sample labels %v", s.Label)
		}
	}
	if n != 9 {
		t.Errorf("%d samples of span A over two files, want 9", n)
	}
}

func TestProfileByTraceNameAndOutside(t *testing.T) {
	dir := t.TempDir()
	writeProfiles(t, dir)
	tmp := t.TempDir()

	out, err := runProfile(t, dir, "--trace", traceT.String(), "--out", filepath.Join(tmp, "t"))
	if err != nil || !strings.Contains(out, "samples      12 ") {
		t.Errorf("by trace: %v\n%s", err, out)
	}

	out, err = runProfile(t, dir, "--span-name", "GET /b", "--out", filepath.Join(tmp, "n"))
	if err != nil || !strings.Contains(out, "samples      3 ") {
		t.Errorf("by name: %v\n%s", err, out)
	}
	p := readPprof(t, filepath.Join(tmp, "n.pb.gz"))
	for _, s := range p.Sample {
		if _, ok := s.Label[profiler.LabelSpanID]; ok {
			t.Errorf("a span name's profile keeps span ids: %v", s.Label)
		}
	}

	out, err = runProfile(t, dir, "--span", "none", "--out", filepath.Join(tmp, "o"))
	if err != nil || !strings.Contains(out, "samples      2 ") {
		t.Errorf("outside spans: %v\n%s", err, out)
	}

	// The default prefix is in the working directory.
	t.Chdir(tmp)
	if _, err := runProfile(t, dir, "--span", spanB.String()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("weft-span-" + spanB.String() + ".svg"); err != nil {
		t.Error(err)
	}
}

func TestProfileNothingMatches(t *testing.T) {
	dir := t.TempDir()
	_, err := runProfile(t, dir, "--span", "00000000000000ff")
	if err == nil || !strings.Contains(err.Error(), "no profiles in "+dir) {
		t.Errorf("empty dir: %v", err)
	}
	writeProfiles(t, dir)
	prefix := filepath.Join(t.TempDir(), "x")
	_, err = runProfile(t, dir, "--span", "00000000000000ff", "--out", prefix)
	if err == nil || !strings.Contains(err.Error(), "no samples of span 00000000000000ff in 2 profiles") {
		t.Errorf("unknown span: %v", err)
	}
	if _, serr := os.Stat(prefix + ".svg"); serr == nil {
		t.Error("an SVG was written for nothing")
	}
	_, err = runProfile(t, dir, "--span", spanA.String(), "--since", "1s")
	if err == nil || !strings.Contains(err.Error(), "since") {
		t.Errorf("since excludes every file: %v", err)
	}
	_, err = runProfile(t, dir, "--span", spanA.String(), "--service", "other")
	if err == nil || !strings.Contains(err.Error(), "for service other") {
		t.Errorf("other service: %v", err)
	}
}

func TestProfileUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--span, --trace or --span-name"},
		{[]string{"--span", "xyz"}, "16 hex digits"},
		{[]string{"--trace", "00f067aa0ba902b7"}, "32 hex digits"},
		{[]string{"--span", "00f067aa0ba902b7", "extra"}, "unexpected arguments"},
		{[]string{"--span", "00f067aa0ba902b7", "--since", "-1h"}, "negative"},
	} {
		_, err := runProfile(t, t.TempDir(), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

func TestProfileDirFromEnv(t *testing.T) {
	o, err := parseProfileArgs(func(k string) string {
		if k == "WEFT_PROFILE_DIR" {
			return "/env/dir"
		}
		return ""
	}, []string{"--span", "00F067AA0BA902B7"})
	if err != nil {
		t.Fatal(err)
	}
	if o.dir != "/env/dir" || o.sel.SpanID != "00f067aa0ba902b7" || o.out != "weft-span-00f067aa0ba902b7" {
		t.Errorf("%+v", o)
	}
}
