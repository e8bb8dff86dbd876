package agent

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weftdev/weft/pkg/jvmattach"
	"github.com/weftdev/weft/pkg/profiler/symbolize"
)

// JIT code of a HotSpot JVM is named by /tmp/perf-<pid>.map, which the JVM
// writes only when asked (jcmd <pid> Compiler.perfmap), and code compiled
// since the last time is unnamed. When samples of a JVM land in code
// nothing names, perfMapRefresher asks, and the aggregator holds those
// samples until the new map is there. A dump that names what was held is
// worth repeating soon (the JVM is still compiling); one that does not
// (code no perf map names, such as some stubs) makes the next wait
// longer, up to perfMapMaxRetry. A Java agent that refreshes the map
// itself makes all this moot.
const (
	perfMapFirstRetry = 5 * time.Second
	perfMapMaxRetry   = time.Minute
	perfMapTimeout    = 10 * time.Second
	perfMapMaxPIDs    = 4096
)

// perfMapRefresher symbolises samples and asks JVMs for their perf map
// when they have JIT frames it cannot name.
type perfMapRefresher struct {
	syms *symbolize.Symbolizer
	want chan uint32
	// done is told of each pid whose dump ended, well or not: the samples
	// held for it can be symbolised again.
	done chan uint32
	log  *slog.Logger
	// jcmd runs the diagnostic command; jvmattach.Jcmd but in tests.
	jcmd  func(ctx context.Context, pid int, command string) error
	isJVM func(pid int) bool
	now   func() time.Time

	mu     sync.Mutex
	states map[uint32]*perfMapState
}

type perfMapState struct {
	jvm      bool
	inFlight bool
	helped   bool      // the last dump named what was held: the JVM is compiling
	next     time.Time // no dump before
	retry    time.Duration
}

func newPerfMapRefresher(syms *symbolize.Symbolizer) *perfMapRefresher {
	return &perfMapRefresher{
		syms: syms,
		want: make(chan uint32, 64),
		done: make(chan uint32, 64),
		log:  slog.With("component", "profiler"),
		jcmd: func(ctx context.Context, pid int, command string) error {
			_, err := jvmattach.Jcmd(ctx, pid, command, perfMapTimeout)
			return err
		},
		isJVM: func(pid int) bool {
			ok, err := jvmattach.IsHotSpot(pid)
			return err == nil && ok
		},
		now:    time.Now,
		states: map[uint32]*perfMapState{},
	}
}

// Symbolize is the symbolizer's.
func (r *perfMapRefresher) Symbolize(pid uint32, user, kernel []uint64) []symbolize.Frame {
	return r.syms.Symbolize(pid, user, kernel)
}

// symbolize resolves a sample's stacks and reports whether to hold it: it
// has JIT frames nothing names, and a fresh perf map of its JVM is on the
// way (done will say when).
func (r *perfMapRefresher) symbolize(pid uint32, user, kernel []uint64) ([]symbolize.Frame, bool) {
	frames := r.syms.Symbolize(pid, user, kernel)
	return frames, unnamedJIT(frames) && r.request(pid)
}

func unnamedJIT(frames []symbolize.Frame) bool {
	for i := range frames {
		if unnamedJITFrame(&frames[i]) {
			return true
		}
	}
	return false
}

func unnamedJITFrame(f *symbolize.Frame) bool {
	if f.Kind != symbolize.KindUser || f.Function != "" {
		return false
	}
	m := f.Module
	return m == symbolize.ModuleAnon || strings.HasPrefix(m, "[anon") || strings.HasPrefix(m, "/memfd:") || m == "//anon"
}

// request asks for a dump of pid's perf map unless it is no JVM or asked
// too recently, and reports whether one is under way.
func (r *perfMapRefresher) request(pid uint32) bool {
	r.mu.Lock()
	st, ok := r.states[pid]
	r.mu.Unlock()
	if !ok {
		// Once per process: a scan of its mappings for libjvm.so.
		st = &perfMapState{jvm: r.isJVM(int(pid)), retry: perfMapFirstRetry}
		r.mu.Lock()
		if len(r.states) >= perfMapMaxPIDs {
			clear(r.states)
		}
		r.states[pid] = st
		r.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !st.jvm:
		return false
	case st.inFlight:
		return true
	case r.now().Before(st.next) && st.helped:
		// Still compiling (code it compiled again since the last dump):
		// the next dump, when it is due, names it; wait for that rather
		// than count the samples unnamed.
		st.inFlight = true
		time.AfterFunc(st.next.Sub(r.now()), func() {
			select {
			case r.want <- pid:
			default: // plenty asked already: the held samples expire
				r.mu.Lock()
				st.inFlight = false
				r.mu.Unlock()
			}
		})
		return true
	case r.now().Before(st.next):
		return false
	}
	select {
	case r.want <- pid:
		st.inFlight = true
		return true
	default: // plenty asked already
		return false
	}
}

// report says whether the dump of pid named the samples held for it:
// dumps that help are repeated soon, the others less and less often.
func (r *perfMapRefresher) report(pid uint32, helped bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.states[pid]
	if !ok {
		return
	}
	st.helped = helped
	if helped {
		st.retry = perfMapFirstRetry
	} else {
		st.retry = min(2*st.retry, perfMapMaxRetry)
	}
	st.next = r.now().Add(st.retry)
}

// Forget drops what is known of a process that exited.
func (r *perfMapRefresher) Forget(pid uint32) {
	r.syms.Forget(pid)
	r.mu.Lock()
	delete(r.states, pid)
	r.mu.Unlock()
}

// run asks JVMs for their perf map until ctx ends.
func (r *perfMapRefresher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case pid := <-r.want:
			r.dump(ctx, pid)
		}
	}
}

func (r *perfMapRefresher) dump(ctx context.Context, pid uint32) {
	err := r.jcmd(ctx, int(pid), "Compiler.perfmap")
	r.mu.Lock()
	if st, ok := r.states[pid]; ok {
		st.inFlight = false
		st.next = r.now().Add(st.retry)
	}
	r.mu.Unlock()
	if err != nil {
		r.log.Debug("JVM perf map not refreshed", "pid", pid, "err", err)
	} else {
		r.log.Debug("asked the JVM for its perf map", "pid", pid)
		// The held samples are named again next: from the new map, not
		// the copy read before the request.
		r.syms.PerfMapChanged(pid)
	}
	select {
	case r.done <- pid:
	case <-ctx.Done():
	}
}
