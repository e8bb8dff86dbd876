package tracer

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/testenv"
)

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"0\n":         {0},
		"0-1\n":       {0, 1},
		"0-3,5,7-8":   {0, 1, 2, 3, 5, 7, 8},
		"2,4":         {2, 4},
		"":            nil,
		" 0-0 \n":     {0},
		"10-11,1\n":   {10, 11, 1},
		"0-2,6-6,9\n": {0, 1, 2, 6, 9},
	} {
		got, err := parseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("parseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"a", "1-", "3-1", "-1", "0,,1", "1-x"} {
		if got, err := parseCPUList(bad); err == nil {
			t.Errorf("parseCPUList(%q) = %v, want an error", bad, got)
		}
	}
}

// The sample struct is shared with C: its Go layout must be the C one,
// identical in both objects.
func TestSampleLayout(t *testing.T) {
	if sampleSize != 2104 {
		t.Errorf("stack_sample is %d bytes, want 2104", sampleSize)
	}
	if n := int(unsafe.Sizeof(kprobeStackSample{})); n != sampleSize {
		t.Errorf("kprobe stack_sample is %d bytes, tp %d", n, sampleSize)
	}
	var s tpStackSample
	if off := unsafe.Offsetof(s.UserStack); off != 72 {
		t.Errorf("user_stack at %d, want 72", off)
	}
	if len(s.UserStack) != MaxStackDepth || len(s.KernelStack) != MaxStackDepth {
		t.Errorf("stacks of %d/%d frames, want %d", len(s.UserStack), len(s.KernelStack), MaxStackDepth)
	}
}

func sampleRecord(r tpStackSample) []byte {
	b := make([]byte, sampleSize+8) // the ring pads records to 8 bytes
	*(*tpStackSample)(unsafe.Pointer(&b[0])) = r
	return b
}

func TestDecodeSample(t *testing.T) {
	r := tpStackSample{TsNs: 42, Pid: 10, Tid: 11, Cpu: 1, Key: 0x80000007, UserLen: 3, KernelLen: 2, TraceFlags: 1}
	copy(r.Comm[:], "worker-1")
	r.TraceId[0], r.TraceId[15] = 0xab, 0xcd
	r.SpanId[7] = 9
	for i := range r.UserStack {
		r.UserStack[i] = uint64(0x400000 + i)
		r.KernelStack[i] = 0xffffffff81000000 + uint64(i)
	}
	var s Sample
	if err := DecodeSample(sampleRecord(r), &s); err != nil {
		t.Fatal(err)
	}
	if s.Time != 42 || s.PID != 10 || s.TID != 11 || s.CPU != 1 || s.Key != 0x80000007 || s.Comm != "worker-1" || s.TraceFlags != 1 {
		t.Errorf("decoded %+v", s)
	}
	if s.TraceID != r.TraceId || s.SpanID != r.SpanId || !s.InSpan() {
		t.Errorf("span %x/%x", s.TraceID, s.SpanID)
	}
	if !slices.Equal(s.UserStack, []uint64{0x400000, 0x400001, 0x400002}) ||
		!slices.Equal(s.KernelStack, []uint64{0xffffffff81000000, 0xffffffff81000001}) {
		t.Errorf("stacks %x %x", s.UserStack, s.KernelStack)
	}

	// A full comm has no NUL; lengths beyond the arrays are clamped; no
	// span is zero ids; an unaligned record decodes the same.
	r = tpStackSample{UserLen: 500, KernelLen: 0}
	copy(r.Comm[:], "0123456789abcdef")
	b := sampleRecord(r)
	un := make([]byte, len(b)+1)
	copy(un[1:], b)
	if err := DecodeSample(un[1:], &s); err != nil {
		t.Fatal(err)
	}
	if s.Comm != "0123456789abcdef" || len(s.UserStack) != MaxStackDepth || len(s.KernelStack) != 0 || s.InSpan() {
		t.Errorf("decoded comm %q, %d user frames, %d kernel frames, in span %v", s.Comm, len(s.UserStack), len(s.KernelStack), s.InSpan())
	}

	if err := DecodeSample(b[:sampleSize-1], &s); err == nil {
		t.Error("short record accepted")
	}
}

// traces_ctx_v1 must keep the OpenTelemetry interop layout in both
// objects, and the sampler must not attach at Open.
func TestTracesCtxAndSamplerSpecs(t *testing.T) {
	for _, p := range []kernel.Path{kernel.PathTracepoint, kernel.PathKprobe} {
		spec, err := Spec(p)
		if err != nil {
			t.Fatal(err)
		}
		m := spec.Maps[tracesCtxMap]
		if m == nil {
			t.Fatalf("%s: no %s map", p, tracesCtxMap)
		}
		if m.Type != ebpf.LRUHash || m.KeySize != 8 || m.ValueSize != 24 || m.MaxEntries != 1<<14 {
			t.Errorf("%s: %s is %v key %d value %d max %d; want LRUHash 8/24/16384",
				p, tracesCtxMap, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
		}
		if int(unsafe.Sizeof(TracesCtxValue{})) != int(m.ValueSize) {
			t.Errorf("TracesCtxValue is %d bytes, map value %d", unsafe.Sizeof(TracesCtxValue{}), m.ValueSize)
		}
		prog := spec.Programs["weft_sample"]
		if prog == nil || prog.Type != ebpf.PerfEvent {
			t.Fatalf("%s: %s missing or not a perf_event program: %+v", p, "weft_sample", prog)
		}
		if attachesAtOpen(prog.SectionName) {
			t.Errorf("%s: section %q would attach at Open", p, prog.SectionName)
		}
		if r := spec.Maps["samples"]; r == nil || r.Type != ebpf.RingBuf {
			t.Errorf("%s: no samples ring buffer", p)
		}
	}
}

func openTestTracer(t *testing.T, opts Options) *Tracer {
	t.Helper()
	opts.Path = kernel.PathTracepoint // the path this kernel can attach
	opts.CaptureBytes = 256
	opts.SelfPID = uint32(os.Getpid())
	tr, err := Open(opts)
	if err != nil {
		t.Fatalf("open tracer: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// startBusyTraced starts a shell spinning in user space, traced by tr.
func startBusyTraced(t *testing.T, tr *Tracer) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "echo ready; read go; while :; do :; done")
	startTraced(t, tr, cmd)
	return cmd
}

// startBusy starts a shell spinning in user space.
func startBusy(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

func monotonicNow(t *testing.T) uint64 {
	t.Helper()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return uint64(ts.Nano())
}

// cpuTime is the user+system time a process used so far.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the parenthesised comm: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / 100 // USER_HZ
}

// collect reads samples for d.
func collect(t *testing.T, s *Sampler, d time.Duration) []Sample {
	t.Helper()
	s.SetDeadline(time.Now().Add(d))
	defer s.SetDeadline(time.Time{})
	var out []Sample
	for {
		smp, err := s.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out
		}
		if err != nil {
			t.Fatalf("read sample: %v", err)
		}
		out = append(out, smp)
	}
}

func TestSamplingKeepsTracedProcessesOnly(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{})
	traced, other := startBusyTraced(t, tr), startBusy(t)
	pid := uint32(traced.Process.Pid)
	online, err := onlineCPUs()
	if err != nil {
		t.Fatal(err)
	}

	start, cpuBefore := monotonicNow(t), cpuTime(t, traced.Process.Pid)
	s, err := tr.StartSampling(SamplingOptions{Frequency: 99})
	if err != nil {
		t.Fatalf("start sampling: %v", err)
	}
	if got := s.CPUs(); !slices.Equal(got, online) {
		t.Errorf("sampling CPUs %v, online %v", got, online)
	}
	if _, err := tr.StartSampling(SamplingOptions{}); err == nil {
		t.Error("a second sampler started while one runs")
	}
	samples := collect(t, s, 2*time.Second)
	end, onCPU := monotonicNow(t), cpuTime(t, traced.Process.Pid)-cpuBefore

	// 99 a second of the child's CPU time (it shares the CPUs with the
	// untraced child and whatever else runs here).
	if len(samples) < 20 {
		t.Fatalf("%d samples in 2 s at 99 Hz", len(samples))
	}
	if want := 99 * onCPU.Seconds(); float64(len(samples)) < want/2 || float64(len(samples)) > want*1.5+10 {
		t.Errorf("%d samples for %v on CPU at 99 Hz, want about %.0f", len(samples), onCPU, want)
	}
	withUser, prev := 0, uint64(0)
	for i, smp := range samples {
		if smp.PID == uint32(other.Process.Pid) {
			t.Fatalf("sample %d of the untraced child %d", i, smp.PID)
		}
		if smp.PID != pid || smp.TID != pid || smp.Key != pid || smp.Comm != "sh" {
			t.Fatalf("sample %d: pid %d tid %d key %d comm %q, want the traced sh %d", i, smp.PID, smp.TID, smp.Key, smp.Comm, pid)
		}
		if !slices.Contains(online, int(smp.CPU)) {
			t.Errorf("sample %d on CPU %d, online %v", i, smp.CPU, online)
		}
		if smp.Time < start || smp.Time > end {
			t.Errorf("sample %d at %d, outside [%d, %d]", i, smp.Time, start, end)
		}
		// The ring orders records by reservation, across CPUs: times may
		// step back by the little between reserving and reading the clock.
		if smp.Time+uint64(time.Millisecond) < prev {
			t.Errorf("sample %d at %d, %d ns before the previous one", i, smp.Time, prev-smp.Time)
		}
		prev = max(prev, smp.Time)
		if smp.InSpan() {
			t.Errorf("sample %d in span %x with no request served", i, smp.TraceID)
		}
		if len(smp.UserStack) > 0 {
			withUser++
		}
	}
	if withUser*10 < len(samples)*8 {
		t.Errorf("%d of %d samples have a user stack", withUser, len(samples))
	}

	if err := s.Close(); err != nil {
		t.Fatalf("close sampler: %v", err)
	}
	if got := s.CPUs(); len(got) != 0 {
		t.Errorf("CPUs %v still sampled after Close", got)
	}
	if _, err := s.Read(); !errors.Is(err, os.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Samples < uint64(len(samples)) {
		t.Errorf("stats count %d samples, %d read", st.Samples, len(samples))
	}
	t.Logf("%d samples for %v on CPU, %d with a user stack; kernel counted %d, lost %d",
		len(samples), onCPU, withUser, st.Samples, st.LostSamples)

	// Sampling can start again once stopped.
	s2, err := tr.StartSampling(SamplingOptions{})
	if err != nil {
		t.Fatalf("restart sampling: %v", err)
	}
	if err := s2.Close(); err != nil {
		t.Fatal(err)
	}
}

// The sampler is settled only once every sample the kernel began has been
// read and handed back with Handled.
func TestSamplerSettled(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{})
	busy := startBusyTraced(t, tr)
	s, err := tr.StartSampling(SamplingOptions{Frequency: 99})
	if err != nil {
		t.Fatalf("start sampling: %v", err)
	}
	defer s.Close()

	s.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := s.Read(); err != nil {
		t.Fatalf("read sample: %v", err)
	}
	if s.Settled() {
		t.Error("settled with a sample read but not handled")
	}
	s.Handled()

	busy.Process.Kill()
	busy.Wait()
	for {
		s.SetDeadline(time.Now().Add(500 * time.Millisecond))
		_, err := s.Read()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatalf("read sample: %v", err)
		}
		s.Handled()
	}
	if !s.Settled() {
		t.Error("not settled with every sample read and handled")
	}
}

func spanCtx(seed byte) tpSpanCtx {
	var c tpSpanCtx
	for i := range c.TraceId {
		c.TraceId[i] = seed + byte(i)
	}
	for i := range c.SpanId {
		c.SpanId[i] = seed ^ 0x5a + byte(i)
	}
	c.TraceFlags = 1
	return c
}

// A sample carries its key's active span, or, for a thread serving
// nothing itself, the span of the thread it works for.
func TestSampleCarriesActiveSpan(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{})
	busy := startBusyTraced(t, tr)
	pid := uint32(busy.Process.Pid)
	active, parents := tr.coll.Maps["active_ctx"], tr.coll.Maps["thread_parent"]
	own, parent := spanCtx(0x10), spanCtx(0x20)
	const helperOf = 0x3ffff0 // a thread id the busy shell "works for"

	s, err := tr.StartSampling(SamplingOptions{Frequency: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(name string, want tpSpanCtx) {
		t.Helper()
		collect(t, s, 100*time.Millisecond) // samples taken before the change
		got := collect(t, s, time.Second)
		if len(got) < 10 {
			t.Fatalf("%s: %d samples in 1 s at 99 Hz", name, len(got))
		}
		for _, smp := range got {
			if smp.PID != pid || smp.TraceID != want.TraceId || smp.SpanID != want.SpanId || smp.TraceFlags != want.TraceFlags {
				t.Fatalf("%s: sample of %d in span %x/%x flags %d, want %x/%x", name, smp.PID, smp.TraceID, smp.SpanID, smp.TraceFlags, want.TraceId, want.SpanId)
			}
		}
	}

	if err := active.Put(uint64(pid)<<32|uint64(pid), own); err != nil {
		t.Fatal(err)
	}
	check("own span", own)

	if err := active.Delete(uint64(pid)<<32 | uint64(pid)); err != nil {
		t.Fatal(err)
	}
	if err := parents.Put(pid, tpThreadLink{Tid: helperOf}); err != nil {
		t.Fatal(err)
	}
	if err := active.Put(uint64(pid)<<32|helperOf, parent); err != nil {
		t.Fatal(err)
	}
	check("parent's span", parent)

	if err := active.Delete(uint64(pid)<<32 | helperOf); err != nil {
		t.Fatal(err)
	}
	check("no span", tpSpanCtx{})
}

// pythonPath is the interpreter itself, not a launcher script, so that
// the child's pid is the interpreter's.
func pythonPath(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		if testenv.Required() {
			t.Fatalf("python3: %v", err)
		}
		t.Skipf("python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// A traced HTTP server that burns CPU inside a request: the samples taken
// meanwhile carry the server span (which continues the caller's trace),
// and traces_ctx_v1 names that span for the serving thread until the
// response starts; unpublished (neither pinned nor asked for), it stays
// empty while the samples still carry the span.
func TestServerSpanInSamplesAndTracesCtx(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, publish := range []bool{true, false} {
		t.Run(map[bool]string{true: "published", false: "unpublished"}[publish], func(t *testing.T) {
			serverSpanInSamples(t, publish)
		})
	}
}

func serverSpanInSamples(t *testing.T, publish bool) {
	tr := openTestTracer(t, Options{TracesCtx: publish})

	srv, _, stdout := tracedPython(t, tr, `import http.server, time
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        end = time.thread_time() + 1.0  # CPU time: a sampler counts it
        while time.thread_time() < end:
            pass
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")
    def log_message(self, *args):
        pass
srv = http.server.HTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
`)
	pid := uint32(srv.Process.Pid)
	port, err := stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("server port: %v", err)
	}

	s, err := tr.StartSampling(SamplingOptions{Frequency: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	const traceHex = "4bf92f3577b34da6a3ce929d0e0e4736"
	var traceID [16]byte
	if _, err := hex.Decode(traceID[:], []byte(traceHex)); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("GET", "http://127.0.0.1:"+strings.TrimSpace(port)+"/spin", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("traceparent", "00-"+traceHex+"-00f067aa0ba902b7-01")
	done := make(chan error, 1)
	go func() {
		c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Do(req)
		if err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()

	// While the request is served, the serving thread's entry names it
	// (published), or there is none (unpublished).
	var inReq TracesCtxValue
	for deadline := time.Now().Add(900 * time.Millisecond); ; {
		v, ok, err := tr.TracesCtx(pid, pid)
		if err != nil {
			t.Fatal(err)
		}
		if ok && !publish {
			t.Fatalf("traces_ctx_v1 entry %x/%x though it is not published", v.TraceID, v.SpanID)
		}
		if ok {
			inReq = v
			break
		}
		if time.Now().After(deadline) {
			if publish {
				t.Fatal("no traces_ctx_v1 entry for the serving thread during the request")
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if publish && (inReq.TraceID != traceID || inReq.SpanID == [8]byte{}) {
		t.Errorf("traces_ctx_v1 during the request: %x/%x, want trace %x and a span", inReq.TraceID, inReq.SpanID, traceID)
	}

	var samples []Sample
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("request: %v", err)
			}
			waiting = false
		default:
		}
		samples = append(samples, collect(t, s, 100*time.Millisecond)...)
	}
	samples = append(samples, collect(t, s, 300*time.Millisecond)...)

	if _, ok, err := tr.TracesCtx(pid, pid); err != nil || ok {
		t.Errorf("traces_ctx_v1 entry still there after the response (err %v)", err)
	}
	inSpan := 0
	for _, smp := range samples {
		if smp.PID != pid {
			t.Fatalf("sample of untraced pid %d", smp.PID)
		}
		if !publish && inReq.SpanID == [8]byte{} && smp.TraceID == traceID {
			inReq.SpanID = smp.SpanID // the span the first sample names
		}
		switch {
		case smp.TraceID == traceID && smp.SpanID == inReq.SpanID && smp.InSpan():
			inSpan++
		case smp.InSpan():
			t.Errorf("sample in span %x/%x, the request's is %x/%x", smp.TraceID, smp.SpanID, traceID, inReq.SpanID)
		}
	}
	// 1 s of the thread's CPU time at 99 Hz: ~99 samples, however busy
	// the machine.
	if inSpan < 80 {
		t.Errorf("%d samples (of %d) in the request's span", inSpan, len(samples))
		logServerSpanState(t, tr, pid)
	}
	t.Logf("%d samples, %d in the server span %x/%x", len(samples), inSpan, traceID, inReq.SpanID)
}

// logServerSpanState says what the kernel decided for the server's
// socket calls and how the process is followed, for a failure's cause.
func logServerSpanState(t *testing.T, tr *Tracer, pid uint32) {
	t.Helper()
	var info tpProcInfo
	err := tr.objs.ProcMode.Lookup(pid, &info)
	t.Logf("correlation of %d: %+v; in the kernel: %+v (%v)", pid, tr.Correlations()[pid], info, err)
	for _, ev := range drainEvents(t, tr, 200*time.Millisecond) {
		head := ev.Payload[:min(len(ev.Payload), 40)]
		t.Logf("event kind %d pid %d tid %d key %#x dir %d bytes %d ctx %d trace %x span %x parent %x: %q",
			ev.Kind, ev.PID, ev.TID, ev.Key, ev.Dir, ev.Bytes, ev.Ctx, ev.TraceID, ev.SpanID, ev.ParentID, head)
	}
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats %+v", st)
}

// The JVM agent protocol keeps traces_ctx_v1 in step: a mount names the
// mounted id's span, an unmount clears it, and so does a slot write (op
// 0x57), which samples see too; the same through OBI's ioctl packets and
// through weft's notes on a socket, which the socket path reads without
// any syscall tracepoint.
func TestAgentMountKeepsTracesCtx(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, via := range []string{"ioctl", "note"} {
		t.Run(via, func(t *testing.T) { testAgentMount(t, via) })
	}
}

func testAgentMount(t *testing.T, via string) {
	tr := openTestTracer(t, Options{IoctlPackets: via == "ioctl", TracesCtx: true})

	agent, stdin, out := tracedPython(t, tr, `import ctypes, fcntl, socket, struct, sys, time
via = sys.argv[1]
slot = ctypes.c_uint64(0)
note = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)  # never connected
def packet(op, arg):
    try:
        if via == "ioctl":
            fcntl.ioctl(0, 0x0b10b1, struct.pack("<BQ", op, arg))
        else:
            note.send(struct.pack("<4sB3xQ", b"weft", op, arg))
    except OSError:
        pass  # the kernel side only observes the call
def poke():
    # a socket call, at which the kernel reads the slot
    try:
        note.send(b"x")
    except OSError:
        pass
for line in sys.stdin:
    f = line.split()
    if f[0] == "mount":
        packet(4, int(f[1]))
    elif f[0] == "unmount":
        packet(5, 0)
    elif f[0] == "slot":
        packet(0x57, ctypes.addressof(slot))
    elif f[0] == "set":
        slot.value = int(f[1])
        poke()
    elif f[0] == "spin":
        end = time.thread_time() + float(f[1])  # CPU time: a sampler counts it
        while time.thread_time() < end:
            pass
    print("ok", flush=True)
`, via)
	pid := uint32(agent.Process.Pid)
	do := func(cmd string) {
		t.Helper()
		if _, err := io.WriteString(stdin, cmd+"\n"); err != nil {
			t.Fatal(err)
		}
		if line, err := out.ReadString('\n'); err != nil || line != "ok\n" {
			t.Fatalf("%s: %q %v", cmd, line, err)
		}
	}
	expect := func(step string, want *tpSpanCtx) {
		t.Helper()
		v, ok, err := tr.TracesCtx(pid, pid)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case want == nil && ok:
			t.Errorf("%s: traces_ctx_v1 holds %x/%x, want no entry", step, v.TraceID, v.SpanID)
		case want != nil && !ok:
			t.Errorf("%s: no traces_ctx_v1 entry", step)
		case want != nil && (v.TraceID != want.TraceId || v.SpanID != want.SpanId):
			t.Errorf("%s: traces_ctx_v1 holds %x/%x, want %x/%x", step, v.TraceID, v.SpanID, want.TraceId, want.SpanId)
		}
	}
	const id = 7
	key := uint32(0x80000000 | id)
	span := spanCtx(0x30)
	if err := tr.coll.Maps["active_ctx"].Put(uint64(pid)<<32|uint64(key), span); err != nil {
		t.Fatal(err)
	}

	do("ok") // the interpreter is up and traced
	do(fmt.Sprint("mount ", id))
	expect("mount", &span)
	do("unmount")
	expect("unmount", nil)
	do("mount 8") // an id serving nothing
	expect("mount of an idle id", nil)
	do("unmount")

	do("slot")
	do(fmt.Sprint("set ", id)) // the poke refreshes the key
	expect("slot set", &span)

	s, err := tr.StartSampling(SamplingOptions{Frequency: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	do("spin 1")
	samples := collect(t, s, 300*time.Millisecond)
	if len(samples) < 80 {
		t.Fatalf("%d samples of 1 s of CPU at 99 Hz", len(samples))
	}
	for _, smp := range samples {
		if smp.PID != pid || smp.Key != key || smp.TraceID != span.TraceId || smp.SpanID != span.SpanId {
			t.Fatalf("sample of %d key %#x span %x/%x; want key %#x span %x/%x",
				smp.PID, smp.Key, smp.TraceID, smp.SpanID, key, span.TraceId, span.SpanId)
		}
	}

	do("set 0")
	expect("slot cleared", nil)
}

// PinTracesCtx pins the map for other profilers and removes the pin on
// Close; a map someone else pinned there is shared and left in place.
func TestPinTracesCtx(t *testing.T) {
	testenv.RequirePrivileged(t)
	if _, err := kernel.EnsureBpffs(); err != nil {
		t.Fatal(err)
	}
	mnt, err := kernel.FindMount("bpf")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(mnt, fmt.Sprintf("weft-test-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(dir) })
	pin := filepath.Join(dir, "otel", tracesCtxMap)

	tr := openTestTracer(t, Options{PinTracesCtx: pin})
	m, err := ebpf.LoadPinnedMap(pin, nil)
	if err != nil {
		t.Fatalf("no pin at %s: %v", pin, err)
	}
	info, err := m.Info()
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != ebpf.LRUHash || info.KeySize != 8 || info.ValueSize != 24 || info.MaxEntries != 1<<14 {
		t.Errorf("pinned map is %v key %d value %d max %d", info.Type, info.KeySize, info.ValueSize, info.MaxEntries)
	}
	// What the tracer writes, a reader of the pin sees.
	v := TracesCtxValue{TraceID: [16]byte{1}, SpanID: [8]byte{2}}
	if err := tr.objs.TracesCtx.Put(uint64(1)<<32|2, v); err != nil {
		t.Fatal(err)
	}
	var got TracesCtxValue
	if err := m.Lookup(uint64(1)<<32|2, &got); err != nil || got != v {
		t.Errorf("through the pin: %v %v", got, err)
	}
	m.Close()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pin); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pin still there after Close: %v", err)
	}

	// Someone else's map, pinned first: weft writes into it and leaves it.
	spec, err := Spec(kernel.PathTracepoint)
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := ebpf.NewMap(spec.Maps[tracesCtxMap])
	if err != nil {
		t.Fatal(err)
	}
	defer theirs.Close()
	if err := theirs.Pin(pin); err != nil {
		t.Fatal(err)
	}
	defer theirs.Unpin()
	tr2 := openTestTracer(t, Options{PinTracesCtx: pin})
	if err := tr2.objs.TracesCtx.Put(uint64(3)<<32|4, v); err != nil {
		t.Fatal(err)
	}
	if err := theirs.Lookup(uint64(3)<<32|4, &got); err != nil || got != v {
		t.Errorf("weft did not write into the map pinned before it: %v %v", got, err)
	}
	if err := tr2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pin); err != nil {
		t.Errorf("someone else's pin removed by Close: %v", err)
	}
}

// A process that spends its time in the kernel has kernel stacks, and the
// user stack where it entered the kernel.
func TestSamplesHaveKernelStacks(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{})
	dd := exec.Command("dd", "if=/dev/zero", "of=/dev/null", "bs=1M")
	if err := dd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dd.Process.Kill()
		dd.Wait()
	})
	if err := tr.SetPID(uint32(dd.Process.Pid), true); err != nil {
		t.Fatal(err)
	}
	s, err := tr.StartSampling(SamplingOptions{Frequency: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	samples := collect(t, s, time.Second)
	withKernel, withUser := 0, 0
	for _, smp := range samples {
		if len(smp.KernelStack) > 0 {
			withKernel++
			if smp.KernelStack[0] < 0xffff800000000000 {
				t.Errorf("kernel frame %#x is not a kernel address", smp.KernelStack[0])
			}
		}
		if len(smp.UserStack) > 0 {
			withUser++
		}
	}
	if len(samples) < 10 || withKernel*2 < len(samples) || withUser*10 < len(samples)*8 {
		t.Errorf("%d samples of dd: %d with a kernel stack, %d with a user stack", len(samples), withKernel, withUser)
	}
	t.Logf("%d samples of dd: %d with a kernel stack, %d with a user stack", len(samples), withKernel, withUser)
}
