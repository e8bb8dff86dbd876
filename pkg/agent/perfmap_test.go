package agent

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/profiler"
	"github.com/weftdev/weft/pkg/profiler/symbolize"
)

func TestUnnamedJIT(t *testing.T) {
	for _, c := range []struct {
		f    symbolize.Frame
		want bool
	}{
		{symbolize.Frame{Module: symbolize.ModuleAnon}, true},
		{symbolize.Frame{Module: "[anon:jit]"}, true},
		{symbolize.Frame{Module: "/memfd:code (deleted)"}, true},
		{symbolize.Frame{Module: symbolize.ModuleAnon, Function: "Lfoo;::bar", Kind: symbolize.KindJIT}, false},
		{symbolize.Frame{Module: "/usr/lib/libc.so.6"}, false},
		{symbolize.Frame{Module: ""}, false},
		{symbolize.Frame{Kind: symbolize.KindKernel, Module: symbolize.ModuleKernel}, false},
	} {
		if got := unnamedJITFrame(&c.f); got != c.want {
			t.Errorf("%+v: %v, want %v", c.f, got, c.want)
		}
	}
}

// A JVM is asked for its perf map when unnamed JIT frames come, one dump
// at a time; dumps that do not help come less and less often, one that
// helps brings the next one near again; other processes are never asked.
func TestPerfMapRefresherPacing(t *testing.T) {
	r := newPerfMapRefresher(symbolize.New(symbolize.Options{}))
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	r.isJVM = func(pid int) bool { return pid == 7 }
	asked := 0
	r.jcmd = func(_ context.Context, pid int, cmd string) error {
		if pid != 7 || cmd != "Compiler.perfmap" {
			t.Errorf("jcmd %d %s", pid, cmd)
		}
		asked++
		return nil
	}
	ctx := context.Background()
	dump := func() { r.dump(ctx, <-r.want); <-r.done }

	if r.request(8) {
		t.Error("a process that is no JVM is waited for")
	}
	if !r.request(7) || !r.request(7) {
		t.Fatal("no dump under way for a JVM")
	}
	dump()
	if asked != 1 || len(r.want) != 0 {
		t.Fatalf("asked %d times", asked)
	}
	// Each unhelpful dump doubles the wait: 5, 10, 20, 40, 60, 60 s.
	var gaps []time.Duration
	last := now
	for len(gaps) < 6 {
		now = now.Add(time.Second)
		if r.request(7) {
			dump()
			gaps = append(gaps, now.Sub(last))
			last = now
			r.report(7, false)
		}
	}
	want := []time.Duration{5, 10, 20, 40, 60, 60}
	for i, g := range gaps {
		if g != want[i]*time.Second {
			t.Errorf("gaps %v, want %v s", gaps, want)
			break
		}
	}
	r.report(7, true)
	now = now.Add(perfMapFirstRetry)
	if !r.request(7) {
		t.Error("a helpful dump does not bring the next one near")
	}
	dump()
	// A JVM still compiling (its last dump helped): samples in code it
	// compiled since wait for the next dump when it is due, not given up
	// unnamed because the last one was recent.
	r.report(7, true)
	now = now.Add(perfMapFirstRetry - 20*time.Millisecond)
	if !r.request(7) {
		t.Fatal("samples of a JVM still compiling are not held for its next dump")
	}
	select {
	case pid := <-r.want:
		if pid != 7 {
			t.Fatalf("dump of %d, want 7", pid)
		}
		r.dump(ctx, pid)
		<-r.done
	case <-time.After(5 * time.Second):
		t.Fatal("the due dump was never asked for")
	}
	if asked != 9 {
		t.Errorf("asked %d times, want 9", asked)
	}
	r.Forget(7)
	if !r.request(7) {
		t.Error("a forgotten JVM (or a new process with its pid) is not asked at once")
	}
}

// Samples in JIT code no perf map names yet wait for the dump and are
// counted named once it is there.
func TestJITWaitNamesHeldSamples(t *testing.T) {
	root := t.TempDir()
	pid := uint32(4242)
	pdir := filepath.Join(root, strconv.Itoa(int(pid)))
	if err := os.MkdirAll(filepath.Join(pdir, "root", "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	maps := "7f0000000000-7f0000100000 rwxp 00000000 00:00 0 \n"
	if err := os.WriteFile(filepath.Join(pdir, "maps"), []byte(maps), 0o644); err != nil {
		t.Fatal(err)
	}
	syms := symbolize.New(symbolize.Options{ProcRoot: root, KallsymsPath: "/dev/null", RefreshInterval: time.Nanosecond})
	r := newPerfMapRefresher(syms)
	r.isJVM = func(int) bool { return true }
	perfMap := filepath.Join(pdir, "root", "tmp", "perf-4242.map")
	r.jcmd = func(context.Context, int, string) error {
		return os.WriteFile(perfMap, []byte("7f0000001000 100 LFoo;::burn\n"), 0o644)
	}
	agg, err := profiler.NewAggregator(profiler.Config{Symbolizer: r, SampleRate: 99})
	if err != nil {
		t.Fatal(err)
	}
	w := newJITWait(r, agg)
	s := &profiler.RawSample{PID: pid, TID: pid, UserStack: []uint64{0x7f0000001010}}
	w.add(s, time.Now())
	w.add(s, time.Now())
	if w.count != 2 {
		t.Fatalf("%d samples held, want 2", w.count)
	}
	r.dump(context.Background(), <-r.want)
	w.release(<-r.done)
	if w.count != 0 {
		t.Fatalf("%d samples still held", w.count)
	}
	p := agg.Flush()[profiler.DefaultService]
	if len(p.Sample) != 1 || p.Sample[0].Value[0] != 2 || p.Sample[0].Location[0].Line[0].Function.Name != "LFoo;::burn" {
		t.Fatalf("profile %v", p)
	}
	// Named now: the next sample is counted at once.
	w.add(s, time.Now())
	if w.count != 0 {
		t.Error("a named sample was held")
	}
}
