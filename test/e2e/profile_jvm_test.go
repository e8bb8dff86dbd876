package e2e

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/profiler/store"
)

const (
	// jvmProfileDeadline bounds each JVM case. How many requests it takes
	// to gather jvmMinSamples depends on how much CPU the machine leaves
	// the JVM, and on how soon the perf map names the burn loop's latest
	// compiled code (weft asks the JVM for a new map at most every 5 s,
	// less often when a map did not help).
	jvmProfileDeadline = 2 * time.Minute
	// jvmMinSamples is how many samples of the burn loop a case judges:
	// about one request's worth at 99 Hz on an idle machine, enough that
	// a single unlabelled sample does not decide the 90 %.
	jvmMinSamples = 20
	// jvmSettleTimeout covers the longest a read sample can stay out of
	// the files: held up to 10 s for a JVM perf map, then one interval.
	jvmSettleTimeout = 20 * time.Second
)

// profileFiles reads a profile directory incrementally: files are
// immutable once they appear, so each is parsed once.
type profileFiles struct {
	dir     string
	samples map[string][]profSample
	total   int64 // samples/count over every file read
}

func newProfileFiles(dir string) *profileFiles {
	return &profileFiles{dir: dir, samples: map[string][]profSample{}}
}

// update reads the files that appeared since the last call.
func (pf *profileFiles) update() error {
	files, err := store.List(pf.dir, time.Time{}, "")
	if err != nil {
		return err
	}
	for _, f := range files {
		if _, ok := pf.samples[f.Path]; ok {
			continue
		}
		out, err := readSamples(f.Path)
		if err != nil {
			return err
		}
		for _, ps := range out {
			pf.total += ps.n
		}
		pf.samples[f.Path] = out
	}
	return nil
}

// paths is the set of files read so far.
func (pf *profileFiles) paths() map[string]bool {
	out := make(map[string]bool, len(pf.samples))
	for p := range pf.samples {
		out[p] = true
	}
	return out
}

// since returns the samples of the files not in before.
func (pf *profileFiles) since(before map[string]bool) []profSample {
	var out []profSample
	for _, p := range slices.Sorted(maps.Keys(pf.samples)) {
		if !before[p] {
			out = append(out, pf.samples[p]...)
		}
	}
	return out
}

// settle waits until the files hold every sample weft has read: none is
// left in the interval being aggregated or held for a JVM perf map. A
// file written at the end of the span's interval is not enough: a sample
// with JIT frames the perf map does not name yet is held until the JVM
// has written a new map, up to 10 s, and then lands in a later file.
func (pf *profileFiles) settle(t *testing.T, w *weft, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		before, err := w.Metrics()
		if err != nil {
			t.Fatalf("weft metrics: %v", err)
		}
		if err := pf.update(); err != nil {
			t.Fatalf("reading profiles: %v", err)
		}
		after, err := w.Metrics()
		if err != nil {
			t.Fatalf("weft metrics: %v", err)
		}
		read, ok := after["profile_samples_read"]
		if !ok {
			t.Fatalf("weft has no profile_samples_read metric: %v", after)
		}
		// Nothing read while the files were listed, and every sample
		// read is in them (or was dropped, counted).
		if before["profile_samples_read"] == read && uint64(pf.total)+after["profile_samples_dropped"] >= read {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("profile files hold %d samples after %v, weft read %d and dropped %d",
				pf.total, timeout, read, after["profile_samples_dropped"])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitServerSpan waits for the SERVER span of service and path.
func waitServerSpan(t *testing.T, rcv *otlptest.Receiver, service, path string, timeout time.Duration) span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, s := range flatten(rcv.Spans()) {
			if s.service == service && s.kind == tracepb.Span_SPAN_KIND_SERVER && s.attrs["url.path"] == path {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s SERVER span of %s within %v:\n%s", service, path, timeout, dump(flatten(rcv.Spans())))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unnamedCode reports whether a sample's stack has a frame nothing named:
// JIT code compiled since the JVM last wrote its perf map.
func unnamedCode(s profSample) bool {
	return slices.ContainsFunc(s.funcs, func(f string) bool {
		return strings.HasPrefix(f, "[anon") || strings.HasPrefix(f, "[unknown]")
	})
}

// jvmProfileCase is one JVM handler that burns CPU in a named method.
type jvmProfileCase struct {
	service, url string
	pid          int
	fn           string // the burn loop, as the perf map names it
	// hops: the burn runs on another thread than the one that read the
	// request (a coroutine), and must carry the request's span there.
	hops bool
}

// burnTally is what the samples of the burn loop say, over requests.
type burnTally struct {
	all, inSpan   int64 // burn samples; those carrying their request's span
	offReader     int64 // in-span burn samples on a thread other than the request's reader
	best          span  // the request whose span has the most burn samples
	bestN         int64
	requests      int
	threads       map[string]int64 // thread name → burn samples
	wrongLabelled []string
}

// driveJVMProfile sends /cpu requests one at a time until enough samples
// of the burn loop are in the files, and tallies them. Requests go one at
// a time and the files are settled in between, so every burn sample in
// the files written after a request began belongs to that request.
func driveJVMProfile(t *testing.T, w *weft, rcv *otlptest.Receiver, pf *profileFiles, c jvmProfileCase) burnTally {
	t.Helper()
	tally := burnTally{threads: map[string]int64{}}
	deadline := time.Now().Add(jvmProfileDeadline)
	pf.settle(t, w, jvmSettleTimeout)
	for tally.all < jvmMinSamples {
		if time.Now().After(deadline) {
			perfMap, _ := os.ReadFile(fmt.Sprintf("/tmp/perf-%d.map", c.pid))
			t.Fatalf("%d requests in %v: %d samples of %s, want ≥ %d; /tmp/perf-%d.map names it: %v",
				tally.requests, jvmProfileDeadline, tally.all, c.fn, jvmMinSamples, c.pid, strings.Contains(string(perfMap), c.fn))
		}
		before := pf.paths()
		rcv.Reset()
		if body := get(t, c.url+"/cpu"); !strings.Contains(body, "checksum=") {
			t.Fatalf("GET %s/cpu: %q", c.url, body)
		}
		tally.requests++
		sp := waitServerSpan(t, rcv, c.service, "/cpu", 30*time.Second)
		pf.settle(t, w, jvmSettleTimeout)
		reader := attrInt(sp, "thread.id")
		var all, inSpan, off, spanAll, spanUnnamed int64
		for _, s := range pf.since(before) {
			if s.pid != int64(c.pid) {
				continue
			}
			if s.span == sp.id {
				spanAll += s.n
				if unnamedCode(s) {
					spanUnnamed += s.n
				}
			}
			if !s.has(c.fn) {
				continue
			}
			all += s.n
			tally.threads[s.thread] += s.n
			if s.span != sp.id {
				continue
			}
			inSpan += s.n
			if s.tid != reader {
				off += s.n
			}
			if s.trace != sp.trace || s.name != "" && s.name != sp.name {
				tally.wrongLabelled = append(tally.wrongLabelled, fmt.Sprintf("%+v", s))
			}
		}
		// A burn the perf map does not name yet (code compiled since its
		// last dump) shows as unnamed code, and this request does not count.
		t.Logf("request %d: span %s, read on thread %d: %d samples in the span, %d of them in unnamed code; %d samples of %s, %d in the span, %d of those on other threads",
			tally.requests, sp.id, reader, spanAll, spanUnnamed, all, c.fn, inSpan, off)
		tally.all += all
		tally.inSpan += inSpan
		tally.offReader += off
		if inSpan > tally.bestN {
			tally.best, tally.bestN = sp, inSpan
		}
	}
	return tally
}

// A JVM handler's CPU is profiled under its request's span: the plain-Java
// thread-per-request jfront, and the Ktor frontend with weft's Java agent,
// whose /cpu coroutine runs on another thread than the one that read the
// request. Nearly all samples of the burn loop carry the request's span
// id, the Kotlin ones also off the reading thread, and weft profile's
// flame graph of the span shows the loop by its Java method name.
func TestProfileJVM(t *testing.T) {
	setup(t)
	buildJava(t)
	rcv := otlptest.Start(t)
	kt := startServices(t, "java", "frontend", nil, "-javaagent:"+agentJar())
	jf := startJVM(t, "java", "jfront", []string{"BACKEND_URL=" + kt.backend.url, "JFRONT_MODE=thread"})
	dir := t.TempDir()
	w := startWeft(t, rcv, append([]string{"--pid=" + kt.pids() + "," + strconv.Itoa(jf.Pid())}, profileArgs(dir, time.Second)...)...)
	defer func() {
		if t.Failed() {
			t.Logf("weft:\n%s", w.Output())
		}
	}()
	pf := newProfileFiles(dir)

	for _, c := range []jvmProfileCase{
		{service: "jfront", url: jf.url, pid: jf.Pid(), fn: "burnCpuJfrontHotLoop"},
		{service: "frontend", url: kt.front.url, pid: kt.front.Pid(), fn: "burnCpuFrontendHotLoop", hops: true},
	} {
		t.Run(c.service, func(t *testing.T) {
			tally := driveJVMProfile(t, w, rcv, pf, c)
			t.Logf("%d requests: %d samples of %s, %d in their request's span, %d of those off the reading thread; threads %v",
				tally.requests, tally.all, c.fn, tally.inSpan, tally.offReader, tally.threads)
			if tally.inSpan*100 < tally.all*90 {
				t.Errorf("%d of %d samples of %s carry their request's span, want ≥ 90 %%", tally.inSpan, tally.all, c.fn)
			}
			if c.hops && tally.offReader == 0 {
				t.Errorf("no sample of %s on a thread other than the one that read its request carries the request's span", c.fn)
			}
			if len(tally.wrongLabelled) > 0 {
				t.Errorf("samples with the span's id but another trace or name: %v", tally.wrongLabelled)
			}
			if tally.bestN == 0 {
				t.Fatalf("no sample of %s carries its request's span", c.fn)
			}
			m, err := w.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			// A span that got samples links to its profile, unless weft had
			// to let it go before it knew (counted).
			if id := tally.best.attrs["pyroscope.profile.id"]; id != tally.best.id && m["spans_profile_unsettled"] == 0 {
				t.Errorf("span with %d samples does not link to its profile: %s", tally.bestN, tally.best)
			}
			checkSpanFlameGraph(t, dir, tally.best.id, c.fn)
		})
	}

	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("metrics: samples %d read %d in span %d lost %d dropped %d; spans profiled %d, unsettled %d; files %d",
		m["profile_samples"], m["profile_samples_read"], m["profile_samples_in_span"], m["profile_samples_lost"],
		m["profile_samples_dropped"], m["spans_profiled"], m["spans_profile_unsettled"], m["profile_files_written"])
}
