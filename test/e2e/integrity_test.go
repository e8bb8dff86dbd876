package e2e

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// heldClient is a rawclient waiting on stdin, so weft can be started with
// its pid before it opens any connection.
type heldClient struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   bytes.Buffer
	errb  bytes.Buffer
}

func holdClient(t *testing.T, args ...string) *heldClient {
	t.Helper()
	return holdCommand(t, bins.client, args...)
}

// holdCommand starts any client that waits for a line on stdin.
func holdCommand(t *testing.T, prog string, args ...string) *heldClient {
	t.Helper()
	h := &heldClient{cmd: exec.Command(prog, args...)}
	h.cmd.Stdout, h.cmd.Stderr = &h.out, &h.errb
	var err error
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.cmd.Process.Kill() })
	return h
}

func (h *heldClient) Pid() int { return h.cmd.Process.Pid }

// Release lets the client run and returns what it printed.
func (h *heldClient) Release(t *testing.T) string {
	t.Helper()
	io.WriteString(h.stdin, "go\n")
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("client %v failed: %v\n%s%s", h.cmd.Args, err, h.out.String(), h.errb.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("client %v stalled", h.cmd.Args)
	}
	return h.out.String()
}

// Requests weft injects into must stay valid HTTP that the server accepts,
// with exactly one traceparent each.
func TestInjectionKeepsRequestsValid(t *testing.T) {
	setup(t)
	srv, addr := startServer(t, "-mode=nethttp")
	scenarios := map[string]int{"split": 1, "pipeline": 3, "hastp": 1, "hastpcase": 1}
	clients := map[string]*heldClient{}
	pids := []string{strconv.Itoa(srv.Pid())}
	for name := range scenarios {
		clients[name] = holdClient(t, "-target="+addr, "-scenario="+name)
		pids = append(pids, strconv.Itoa(clients[name].Pid()))
	}
	rcv := otlptest.Start(t)
	startWeft(t, rcv, "--pid="+strings.Join(pids, ","))
	for name, n := range scenarios {
		out := clients[name].Release(t)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != n {
			t.Errorf("%s: %d responses, want %d:\n%s", name, len(lines), n, out)
			continue
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "200 traceparent=1 00-") {
				t.Errorf("%s: server saw %q, want one traceparent", name, l)
			}
		}
		if strings.HasPrefix(name, "hastp") && !strings.Contains(out, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01") {
			t.Errorf("the application's own traceparent was not kept: %s", out)
		}
	}
	checkOwnTraceparentSpans(t, rcv, 6)
}

// checkOwnTraceparentSpans checks the spans of n requests, of which two
// (hastp, hastpcase) carried the application's own traceparent: weft's
// client span and the server's span are children of the application's
// span, and no two spans share an id.
func checkOwnTraceparentSpans(t *testing.T, rcv *otlptest.Receiver, n int) {
	t.Helper()
	const appTrace, appSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	recs, ok := rcv.WaitFor(2*n, 30*time.Second)
	if !ok {
		t.Fatalf("received %d spans, want %d", len(recs), 2*n)
	}
	ids := map[string]bool{}
	kinds := map[tracepb.Span_SpanKind]int{}
	for _, r := range recs {
		id := hex.EncodeToString(r.Span.GetSpanId())
		if ids[id] {
			t.Errorf("two spans with id %s", id)
		}
		ids[id] = true
		if hex.EncodeToString(r.Span.GetTraceId()) != appTrace {
			continue
		}
		kinds[r.Span.GetKind()]++
		if parent := hex.EncodeToString(r.Span.GetParentSpanId()); parent != appSpan || id == appSpan {
			t.Errorf("%v span %s under %s, want a child of the application's span %s", r.Span.GetKind(), id, parent, appSpan)
		}
	}
	if kinds[tracepb.Span_SPAN_KIND_CLIENT] != 2 || kinds[tracepb.Span_SPAN_KIND_SERVER] != 2 {
		t.Errorf("spans in the application's trace: %v, want 2 client and 2 server", kinds)
	}
}

// An injected request leaves in as many TCP segments as it would have
// without weft: one for one small write.
func TestInjectedRequestIsOneSegment(t *testing.T) {
	setup(t)
	srv, addr := startServer(t, "-mode=nethttp")
	c := holdClient(t, "-target="+addr, "-scenario=segments")
	w := startWeft(t, otlptest.Start(t), fmt.Sprintf("--pid=%d,%d", srv.Pid(), c.Pid()))
	out := c.Release(t)
	if !strings.HasPrefix(out, "200 traceparent=1 00-") {
		t.Errorf("the server saw %q, want one traceparent", out)
	}
	if !strings.HasSuffix(out, "segs=1\n") {
		t.Errorf("the injected request was not one segment: %q", out)
	}
	// An HTTP/1.x connection stays in the sockhash.
	checkReleased(t, w, 0)
}

// checkReleased compares how many client connections of traced processes
// left weft's injection sockhash as not HTTP/1.x with the want. (On
// kernels whose sockops take every connection, the test's and weft's own
// join too, and leave as untraced: counted apart.)
func checkReleased(t *testing.T, w *weft, want uint64) {
	t.Helper()
	var m map[string]uint64
	deadline := time.Now().Add(5 * time.Second) // weft reads the kernel's counters every second
	for {
		var err error
		if m, err = w.Metrics(); err != nil {
			t.Fatal(err)
		}
		if m["propagation_conns_released"] == want && m["propagation_conns_joined"] > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if m["propagation_conns_released"] != want || m["propagation_conns_joined"] == 0 {
		t.Errorf("sockhash: %d connections joined, %d released as not HTTP/1.x (%d as untraced); want %d released",
			m["propagation_conns_joined"], m["propagation_conns_released"], m["propagation_conns_released_untraced"], want)
	}
}

// A TLS connection is never touched: its bytes are not HTTP/1.x text.
func TestInjectionLeavesTLSAlone(t *testing.T) {
	setup(t)
	srv, addr := startServer(t, "-mode=nethttp", "-tls")
	c := holdClient(t, "-target="+addr, "-scenario=tls")
	w := startWeft(t, otlptest.Start(t), fmt.Sprintf("--pid=%d,%d", srv.Pid(), c.Pid()))
	if out := c.Release(t); !strings.HasPrefix(out, "traceparent=0") {
		t.Fatalf("over TLS the server saw %q", out)
	}
	// Its ClientHello told weft_inject it is not HTTP/1.x: the connection
	// left the sockhash at the ACK and sent the rest on TCP's own path.
	checkReleased(t, w, 1)
}

// A client that reads with blocking calls keeps working when a signal
// interrupts its read: the kernel's sockmap receive path would fail that
// read with EAGAIN (see connects_blocking in bpf/include/propagate.h), so
// its connection, blocking when it connects, never joins the sockhash.
func TestInjectionSparesBlockingReads(t *testing.T) {
	setup(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 not found: the blocking client is a Python script")
	}
	srv, addr := startServer(t, "-mode=nethttp")
	script := filepath.Join(repoRoot(), "test", "e2e", "testdata", "blocking_client.py")
	c := holdCommand(t, "python3", script, addr, "/sleep?ms=1000")
	w := startWeft(t, otlptest.Start(t), fmt.Sprintf("--pid=%d,%d", srv.Pid(), c.Pid()))
	if out := c.Release(t); !strings.HasPrefix(out, "HTTP/1.1 200") {
		t.Fatalf("blocking client got %q", out)
	}
	var m map[string]uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		var err error
		if m, err = w.Metrics(); err != nil {
			t.Fatal(err)
		}
		if m["propagation_conns_skipped_blocking"] > 0 {
			break
		}
	}
	if m["propagation_conns_skipped_blocking"] != 1 || m["propagation_conns_joined"] != 0 {
		t.Errorf("%d connections left out as blocking, want 1; %d joined, want 0",
			m["propagation_conns_skipped_blocking"], m["propagation_conns_joined"])
	}
}

// A JVM's sockets connected without a timeout are blocking, but the JDK
// retries a read that fails with EAGAIN: weft lets them join, so their
// requests still get a traceparent.
func TestInjectionJVMBlockingSockets(t *testing.T) {
	setup(t)
	srv, addr := startServer(t, "-mode=nethttp")
	client := filepath.Join(repoRoot(), "test", "e2e", "testdata", "BlockingClient.java")
	for _, name := range []string{"jdk17", "jdk25"} {
		t.Run(name, func(t *testing.T) {
			c := holdCommand(t, jdks[name], client, addr)
			w := startWeft(t, otlptest.Start(t), fmt.Sprintf("--pid=%d,%d", srv.Pid(), c.Pid()))
			out := c.Release(t)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 {
				t.Fatalf("client printed %q, want two responses", out)
			}
			for i, l := range lines {
				if !strings.HasPrefix(l, "traceparent=1 00-") {
					t.Errorf("request %d: the server saw %q, want one traceparent", i, l)
				}
			}
			m, err := w.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			if m["propagation_conns_skipped_blocking"] != 0 {
				t.Errorf("%d connections left out as blocking, want 0", m["propagation_conns_skipped_blocking"])
			}
		})
	}
}

// Large bodies cross untouched in both directions, without a stall.
func TestInjectionLargeBodies(t *testing.T) {
	setup(t)
	srv, addr := startServer(t, "-mode=nethttp")
	const down = 100 << 20
	run := func(traced bool) (string, string) {
		dl := holdClient(t, "-target="+addr, "-scenario=download", "-bytes="+strconv.Itoa(down))
		ul := holdClient(t, "-target="+addr, "-scenario=upload", "-bytes="+strconv.Itoa(1<<20))
		if traced {
			startWeft(t, otlptest.Start(t), fmt.Sprintf("--pid=%d,%d,%d", srv.Pid(), dl.Pid(), ul.Pid()))
		}
		return dl.Release(t), ul.Release(t)
	}
	plainDL, _ := run(false)
	dl, ul := run(true)
	zeros := sha256.Sum256(make([]byte, down))
	if f := strings.Fields(dl); len(f) < 3 || f[0] != "got" || f[1] != strconv.Itoa(down) || f[2] != hex.EncodeToString(zeros[:]) {
		t.Errorf("download damaged: %q", dl)
	}
	// "sent N sum" then "server N sum": the server got what was sent.
	lines := strings.Split(strings.TrimSpace(ul), "\n")
	if len(lines) != 2 || strings.TrimPrefix(lines[0], "sent ") != strings.TrimPrefix(lines[1], "server ") {
		t.Errorf("upload damaged: %q", ul)
	}
	t.Logf("100 MB download without weft: %s; with weft: %s", lastField(plainDL), lastField(dl))
}

func lastField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[len(f)-1]
}

// SIGKILL weft under load: the traffic keeps flowing, and nothing of weft
// stays attached in the kernel.
func TestSIGKILLLeavesNothingAttached(t *testing.T) {
	setup(t)
	c := startChain(t)
	w := startWeft(t, otlptest.Start(t), "--pid="+c.pids())

	var sent, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				resp, err := client.Get(c.url)
				if err != nil {
					failed.Add(1)
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(b), "downstream said 200") {
					failed.Add(1)
				}
			}
		}()
	}
	time.Sleep(2 * time.Second)
	held := heldProgramIDs(t, w.cmd.Process.Pid)
	if len(held) == 0 {
		t.Fatal("weft holds no BPF program before its SIGKILL")
	}
	if err := w.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-w.done
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	if failed.Load() > 0 || sent.Load() == 0 {
		t.Fatalf("%d of %d requests failed across weft's SIGKILL", failed.Load(), sent.Load())
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		left := stillLoaded(t, held)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("weft's programs still loaded after SIGKILL: %v", left)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%d requests, none failed; no weft program left", sent.Load())
}

// heldProgramIDs lists the ids of the BPF programs a process holds, by a
// program or a link fd. Other weft instances run side by side with this test
// (and bpftool need not report holders), so the check after the SIGKILL is
// by these ids, not by name.
func heldProgramIDs(t *testing.T, pid int) map[int]bool {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[int]bool{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed since the listing
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "prog_id:"); ok {
				if id, err := strconv.Atoi(strings.TrimSpace(v)); err == nil {
					ids[id] = true
				}
			}
		}
	}
	return ids
}

// stillLoaded names the programs of ids the kernel still has loaded.
func stillLoaded(t *testing.T, ids map[int]bool) []string {
	t.Helper()
	out, err := exec.Command("bpftool", "prog", "show", "--json").Output()
	if err != nil {
		t.Fatalf("bpftool: %v", err)
	}
	var progs []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal(out, &progs); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range progs {
		if ids[p.ID] {
			names = append(names, fmt.Sprintf("%s (id %d)", p.Name, p.ID))
		}
	}
	return names
}
