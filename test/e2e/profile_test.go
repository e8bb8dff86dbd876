package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/profiler"
	"github.com/weftdev/weft/pkg/profiler/store"
)

// minBurnSamples is the fewest samples a burn of 200 ms of the thread's CPU
// time must give at 99 Hz: ~20 however busy the machine, since the sampler's
// clock runs per CPU; a few lost at the burn's edges.
const minBurnSamples = 15

// profileArgs turn the profiler on at 99 Hz with short intervals.
func profileArgs(dir string, interval time.Duration) []string {
	return []string{"--profile=on", "--profile-frequency=99", "--profile-interval=" + interval.String(), "--profile-dir=" + dir}
}

// profSample is one pprof sample, flattened for assertions.
type profSample struct {
	file              string
	funcs             []string // leaf first
	span, trace, name string
	thread            string
	pid, tid          int64
	n                 int64
}

func (s profSample) has(fn string) bool {
	return slices.ContainsFunc(s.funcs, func(f string) bool { return strings.Contains(f, fn) })
}

func label(m map[string][]string, k string) string { return strings.Join(m[k], ",") }

func numLabel(m map[string][]int64, k string) int64 {
	if v := m[k]; len(v) == 1 {
		return v[0]
	}
	return -1
}

// loadSamples reads every sample of the profiles written since since.
func loadSamples(t *testing.T, dir string, since time.Time) []profSample {
	t.Helper()
	files, err := store.List(dir, since, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []profSample
	for _, f := range files {
		ps, err := readSamples(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ps...)
	}
	return out
}

// spanFilter is pprof's tag filter for one span id. Anchored: a bare id
// made of digits then letters ("8884885167bbdbff") is read by pprof as a
// numeric range with a unit, not as a regexp, and matches nothing.
func spanFilter(id string) string { return "span_id=^" + id + "$" }

// readSamples reads the samples of one profile file.
func readSamples(path string) ([]profSample, error) {
	p, err := store.Read(path)
	if err != nil {
		return nil, err
	}
	var out []profSample
	for _, s := range p.Sample {
		ps := profSample{
			file: path, span: label(s.Label, profiler.LabelSpanID), trace: label(s.Label, profiler.LabelTraceID),
			name: label(s.Label, profiler.LabelSpanName), thread: label(s.Label, profiler.LabelThread),
			pid: numLabel(s.NumLabel, profiler.LabelPID), tid: numLabel(s.NumLabel, profiler.LabelTID), n: s.Value[0],
		}
		for _, l := range s.Location {
			for _, ln := range l.Line {
				ps.funcs = append(ps.funcs, ln.Function.Name)
			}
		}
		out = append(out, ps)
	}
	return out, nil
}

// waitProfiles waits until every sample taken before `after` is in a
// file: the flush of the interval holding it, a moment later. (An
// interval without samples writes no file, so there is nothing to poll.)
func waitProfiles(after time.Time, interval time.Duration) {
	time.Sleep(time.Until(after.Add(interval + time.Second)))
}

// burnShare counts the samples of pid whose stack holds fn, and those of
// them that carry span id.
func burnShare(samples []profSample, pid int, fn, id string) (all, inSpan int64) {
	for _, s := range samples {
		if s.pid != int64(pid) || !s.has(fn) {
			continue
		}
		all += s.n
		if s.span == id {
			inSpan += s.n
		}
	}
	return all, inSpan
}

// weftProfile runs `weft profile` and returns its output.
func weftProfile(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(bins.weft, append([]string{"profile"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("weft profile %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// pprofTop runs `go tool pprof -top` with extra flags.
func pprofTop(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-top"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// rawSample is one sample of `go tool pprof -raw`: its count and labels.
type rawSample struct {
	n      int64
	labels string
}

// pprofRaw runs `go tool pprof -raw` and reads its samples.
func pprofRaw(t *testing.T, args ...string) []rawSample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-raw"}, args...)...).CombinedOutput()
	if err != nil {
		// pprof refuses a profile the filter left empty.
		if strings.Contains(string(out), "no samples") || strings.Contains(string(out), "empty") {
			return nil
		}
		t.Fatalf("go tool pprof -raw %v: %v\n%s", args, err, out)
	}
	var rs []rawSample
	inSamples := false
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Samples:"):
			inSamples = true
		case strings.HasPrefix(line, "Locations"):
			inSamples = false
		case !inSamples:
		case strings.Contains(line, ": ") && !strings.Contains(line, ":["):
			f := strings.Fields(line)
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				rs = append(rs, rawSample{n: n})
			}
		case len(rs) > 0:
			rs[len(rs)-1].labels += strings.TrimSpace(line) + " "
		}
	}
	return rs
}

// checkSpanFlameGraph runs weft profile for one span and checks that both
// files hold fn, and that pprof's span label filter selects it.
func checkSpanFlameGraph(t *testing.T, dir, id, fn string) {
	t.Helper()
	prefix := filepath.Join(t.TempDir(), "span")
	out := weftProfile(t, "--dir", dir, "--span", id, "--out", prefix)
	t.Logf("weft profile --span %s:\n%s", id, out)
	if !strings.Contains(out, prefix+".svg") || !strings.Contains(out, prefix+".pb.gz") || !strings.Contains(out, "samples") {
		t.Errorf("weft profile output:\n%s", out)
	}
	svg, err := os.ReadFile(prefix + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), fn) {
		t.Errorf("the span's flame graph does not show %s", fn)
	}
	if top := pprofTop(t, "-tagfocus", spanFilter(id), prefix+".pb.gz"); !strings.Contains(top, fn) {
		t.Errorf("pprof -tagfocus span_id=%s does not list %s:\n%s", id, fn, top)
	}
}

// A net/http handler burning ~200 ms of CPU: every sample of its
// goroutine carries the span's id and name (weft keys Go processes by
// goroutine, so the scheduler moving it between threads changes nothing),
// the span links to its profile, and weft profile draws it.
//
// The interval is longer than the test: the one file is written when weft
// stops, after the span was exported, so every sample of it is named. (A
// file written between a span's last sample and its export has no name
// for it, by design; TestProfileOutsideSpansAndUntraced covers intervals.)
func TestProfileGoSpan(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startServer(t, "-mode=nethttp")
	dir := t.TempDir()
	w := startWeft(t, rcv, append([]string{"--pid=" + strconv.Itoa(srv.Pid())}, profileArgs(dir, time.Hour)...)...)

	begin := time.Now()
	get(t, "http://"+addr+"/hello")
	hello := waitSpans(t, rcv, 1, 20*time.Second, func(s span) bool { return s.service == "websrv" })[0]
	if v, ok := hello.attrs["pyroscope.profile.id"]; ok && v != hello.id {
		t.Errorf("/hello links to another profile: %s", hello)
	}

	rcv.Reset()
	get(t, "http://"+addr+"/burn?cpums=200")
	burn := waitSpans(t, rcv, 1, 20*time.Second, func(s span) bool { return s.service == "websrv" })[0]
	if burn.attrs["pyroscope.profile.id"] != burn.id {
		t.Errorf("the burning span does not link to its profile: %s", burn)
	}
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	w.stop()
	if out := w.Output(); !strings.Contains(out, "profiling") {
		t.Fatalf("weft did not profile:\n%s", out)
	}
	samples := loadSamples(t, dir, begin)
	all, inSpan := burnShare(samples, srv.Pid(), "main.weftBurnCPUHotLoop", burn.id)
	t.Logf("%d samples in weftBurnCPUHotLoop, %d with span %s", all, inSpan, burn.id)
	if all < minBurnSamples {
		t.Fatalf("%d samples of the burn, want ≥ %d", all, minBurnSamples)
	}
	if inSpan != all {
		t.Errorf("%d of %d samples of the handler carry its span, want all", inSpan, all)
	}
	for _, s := range samples {
		if s.span != burn.id {
			continue
		}
		if s.trace != burn.trace || s.name != "GET /burn" || s.thread != "websrv" {
			t.Errorf("sample labels: trace %s name %q thread %q", s.trace, s.name, s.thread)
			break
		}
	}
	checkSpanFlameGraph(t, dir, burn.id, "weftBurnCPUHotLoop")

	// In the file, pprof's span label filter selects exactly the span's
	// samples.
	for _, s := range samples {
		if s.span != burn.id {
			continue
		}
		var want, total int64
		for _, o := range samples {
			if o.file == s.file {
				total += o.n
				if o.span == burn.id {
					want += o.n
				}
			}
		}
		focus := pprofRaw(t, "-tagfocus", spanFilter(burn.id), s.file)
		ignore := pprofRaw(t, "-tagignore", spanFilter(burn.id), s.file)
		var nf, ni int64
		for _, r := range focus {
			nf += r.n
			if !strings.Contains(r.labels, "span_id:["+burn.id+"]") {
				t.Errorf("-tagfocus span_id=%s selected %q", burn.id, r.labels)
			}
		}
		for _, r := range ignore {
			ni += r.n
			if strings.Contains(r.labels, burn.id) {
				t.Errorf("-tagignore span_id=%s kept %q", burn.id, r.labels)
			}
		}
		if nf != want || nf+ni != total {
			t.Errorf("pprof selects %d samples of the span and leaves %d, the file has %d of %d", nf, ni, want, total)
		}
		if top := pprofTop(t, "-tagfocus", spanFilter(burn.id), s.file); !strings.Contains(top, "main.weftBurnCPUHotLoop") {
			t.Errorf("-tagfocus span_id=%s does not show the burn:\n%s", burn.id, top)
		}
		break
	}

	files, err := store.List(dir, begin, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("metrics: samples %d read %d in span %d lost %d dropped %d; spans profiled %d, unsettled %d; files %d",
		m["profile_samples"], m["profile_samples_read"], m["profile_samples_in_span"], m["profile_samples_lost"],
		m["profile_samples_dropped"], m["spans_profiled"], m["spans_profile_unsettled"], len(files))
	if m["profile_samples_read"] < uint64(all) || m["spans_profiled"] < 1 || len(files) != 1 {
		t.Errorf("self-metrics: %v; files %d, want 1", m, len(files))
	}
	if m["profile_samples_lost"] != 0 || m["profile_samples_dropped"] != 0 || m["spans_profile_unsettled"] != 0 {
		t.Errorf("samples lost or dropped, or spans released unsettled: %v", m)
	}
}

// A traced process that burns CPU outside any request is profiled, its
// samples labelled span_id=none; a busy process that is not traced is
// never sampled.
func TestProfileOutsideSpansAndUntraced(t *testing.T) {
	setup(t)
	srv, addr := startServer(t, "-mode=nethttp", "-background-burn")
	other, _ := startServer(t, "-mode=nethttp", "-background-burn")
	dir := t.TempDir()
	w := startWeft(t, nil, append([]string{"--pid=" + strconv.Itoa(srv.Pid())}, profileArgs(dir, time.Second)...)...)

	get(t, "http://"+addr+"/burn?cpums=100")
	time.Sleep(4 * time.Second)
	waitProfiles(time.Now(), time.Second)
	samples := loadSamples(t, dir, time.Time{})
	bg, bgNone, inSpan, others, bgSpans := classifyOutside(t, samples, srv.Pid(), other.Pid())
	t.Logf("background burn: %d samples, %d labelled outside any span; %d samples in the request; %d of the untraced process",
		bg, bgNone, inSpan, others)
	if bg < 30 {
		t.Errorf("%d samples of a third of a CPU for 4 s at 99 Hz, want ≥ 30", bg)
	}
	// weft keys Go processes by goroutine: the background goroutine, on
	// whatever thread it runs, is in no request.
	if bgNone != bg {
		t.Errorf("%d of %d background samples labelled as in a span: %v", bg-bgNone, bg, bgSpans)
	}
	if inSpan == 0 {
		t.Error("no sample of the request")
	}
	if others != 0 {
		t.Errorf("%d samples of a process that is not traced", others)
	}
	checkSpanFlameGraph(t, dir, profiler.NoSpan, "weftBackgroundBurnSlice")

	// With samples coming all the time, spans still learn theirs at once,
	// not when their hold runs out.
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m["spans_exported"] != 1 || m["spans_profile_unsettled"] != 0 {
		t.Errorf("spans exported %d of 1, released unsettled %d", m["spans_exported"], m["spans_profile_unsettled"])
	}
}

// classifyOutside sorts the samples of TestProfileOutsideSpansAndUntraced:
// the traced process's background burn (all, and those outside any span,
// and the spans the rest carry), its other samples in a span, and those of
// the untraced process.
func classifyOutside(t *testing.T, samples []profSample, traced, untraced int) (bg, bgNone, inSpan, others int64, bgSpans map[string]int64) {
	t.Helper()
	bgSpans = map[string]int64{}
	for _, s := range samples {
		switch {
		case s.pid == int64(untraced):
			others += s.n
		case s.pid != int64(traced):
			t.Errorf("sample of pid %d, neither process: %+v", s.pid, s)
		case s.has("main.weftBackgroundBurnSlice"):
			bg += s.n
			if s.span == profiler.NoSpan && s.trace == profiler.NoSpan && s.name == "" {
				bgNone += s.n
			} else {
				bgSpans[s.span] += s.n
			}
		case s.span != profiler.NoSpan:
			inSpan += s.n
		}
	}
	return bg, bgNone, inSpan, others, bgSpans
}

// spanOf picks the one server span of a service and path.
func spanOf(t *testing.T, got []span, service, path string) span {
	t.Helper()
	for _, s := range got {
		if s.service == service && s.kind == tracepb.Span_SPAN_KIND_SERVER && s.attrs["url.path"] == path {
			return s
		}
	}
	t.Fatalf("no %s SERVER span of %s:\n%s", service, path, dump(got))
	return span{}
}
