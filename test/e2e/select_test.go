package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/selector"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// serverSpansByPID counts the server spans of each process, by the path
// each served, for numbered requests.
func serverSpansByPID(spans []span) map[int64][]string {
	out := map[int64][]string{}
	for _, s := range spans {
		if s.kind != tracepb.Span_SPAN_KIND_SERVER {
			continue
		}
		pid, _ := s.res["process.pid"].(int64)
		path, _ := s.attrs["url.path"].(string)
		out[pid] = append(out[pid], path)
	}
	return out
}

// getNumbered sends GET base+"/work/<tag>-<i>" for i in 0..n-1, each on a
// fresh connection.
func getNumbered(t *testing.T, base, tag string, n int) []string {
	t.Helper()
	var paths []string
	for i := 0; i < n; i++ {
		p := fmt.Sprintf("/work/%s-%d", tag, i)
		get(t, base+p)
		paths = append(paths, p)
	}
	return paths
}

func sameSet(got, want []string) bool {
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// psOf runs `weft ps` against w.
func psOf(t *testing.T, w *weft) string {
	t.Helper()
	addr := strings.TrimSuffix(strings.TrimPrefix(w.metrics, "http://"), "/metrics")
	out, err := exec.Command(bins.weft, "ps", "--metrics-addr="+addr).CombinedOutput()
	if err != nil {
		t.Fatalf("weft ps: %v\n%s", err, out)
	}
	return string(out)
}

// psLine is the `weft ps` line of pid, or "".
func psLine(ps string, pid int) string {
	for _, l := range strings.Split(ps, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == strconv.Itoa(pid) {
			return l
		}
	}
	return ""
}

// --pid of a shell selects the server it already runs and one its
// subshell forks later (a grandchild).
func TestSelectPIDTree(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	portA, portB := freePort(t), freePort(t)
	trigger := filepath.Join(t.TempDir(), "go")
	// Nothing below the shell holds the test's output pipe, so that the
	// shell's cleanup does not wait for them; they are killed by port.
	script := `exec >/dev/null 2>&1
"$1" -addr=127.0.0.1:$2 &
( while [ ! -e "$4" ]; do sleep 0.05; done; "$1" -addr=127.0.0.1:$3; true ) &
wait`
	shell := start(t, "sh", "-c", script, "sh", bins.websr, strconv.Itoa(portA), strconv.Itoa(portB), trigger)
	t.Cleanup(func() {
		for _, port := range []int{portA, portB} {
			pids, _ := selector.ListeningPIDs("/proc", []int{port})
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
		}
	})
	waitListening(t, portA)
	w := startWeft(t, rcv, "--pid="+strconv.Itoa(shell.Pid()))
	if err := os.WriteFile(trigger, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitListening(t, portB)
	const n = 20
	wantA := getNumbered(t, fmt.Sprintf("http://127.0.0.1:%d", portA), "a", n)
	wantB := getNumbered(t, fmt.Sprintf("http://127.0.0.1:%d", portB), "b", n)
	spans := waitSpans(t, rcv, 2*n, 30*time.Second, func(s span) bool { return s.kind == tracepb.Span_SPAN_KIND_SERVER })
	byPID := serverSpansByPID(spans)
	if len(byPID) != 2 {
		t.Fatalf("server spans from %d processes, want 2 (the child and the grandchild):\n%s", len(byPID), dump(spans))
	}
	pidA, pidB := listenerPID(t, portA), listenerPID(t, portB)
	if !sameSet(byPID[int64(pidA)], wantA) {
		t.Errorf("child server (pid %d): spans for %v, want %v", pidA, byPID[int64(pidA)], wantA)
	}
	if !sameSet(byPID[int64(pidB)], wantB) {
		t.Errorf("grandchild server (pid %d): spans for %v, want %v", pidB, byPID[int64(pidB)], wantB)
	}
	ps := psOf(t, w)
	sel := "pid=" + strconv.Itoa(shell.Pid()) + " (descendant)"
	for _, pid := range []int{pidA, pidB} {
		if l := psLine(ps, pid); !strings.Contains(l, sel) || !strings.Contains(l, "websrv") {
			t.Errorf("weft ps line of %d = %q, want websrv and %q:\n%s", pid, l, sel, ps)
		}
	}
	for _, pid := range []int{pidA, pidB} {
		if c := strings.Count(w.Output(), fmt.Sprintf(`msg="tracing process" component=selector pid=%d `, pid)); c != 1 {
			t.Errorf("weft logged tracing pid %d %d times, want once:\n%s", pid, c, w.Output())
		}
	}
}

// listenerPID is the process listening on port.
func listenerPID(t *testing.T, port int) int {
	t.Helper()
	pids, err := selector.ListeningPIDs("/proc", []int{port})
	if err != nil || len(pids) != 1 {
		t.Fatalf("listeners on %d: %v %v", port, pids, err)
	}
	return pids[0]
}

// --pid of nginx's master, its two workers started before weft: requests
// either worker serves give spans.
func TestSelectNginxMaster(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	_, backAddr := startServer(t, "-mode=nethttp")
	master, workers, addr := startNginx(t, "2", backAddr)
	startWeft(t, rcv, "--pid="+strconv.Itoa(master.Pid()))
	const n = 60
	want := getNumbered(t, "http://"+addr+"/req", "", n)
	for i := range want {
		want[i] = strings.Replace(want[i], "/work/", "/req/work/", 1)
	}
	spans := waitSpans(t, rcv, n, 30*time.Second, func(s span) bool {
		return s.kind == tracepb.Span_SPAN_KIND_SERVER && s.service == "nginx"
	})
	byPID := serverSpansByPID(spans)
	var all []string
	for _, w := range workers {
		if len(byPID[int64(w)]) == 0 {
			t.Errorf("worker %d: no spans (%d workers share the port by reuseport hash over %d connections)", w, len(workers), n)
		}
		all = append(all, byPID[int64(w)]...)
	}
	if !sameSet(all, want) {
		t.Errorf("nginx server spans for %d paths, want the %d requested:\n%s", len(all), n, dump(spans))
	}
}

// --cgroup: a server started inside the cgroup after weft is traced from
// its first request; one outside is not. --container finds a cgroup named
// the way container runtimes name theirs, with a server already in it.
func TestSelectCgroup(t *testing.T) {
	setup(t)
	root, err := kernel.FindMount("cgroup2")
	if err != nil {
		t.Fatalf("cgroup v2: %v", err)
	}
	idb := make([]byte, 32)
	rand.Read(idb)
	id := hex.EncodeToString(idb)
	dir := filepath.Join(root, "weft-test-"+id+".scope")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// The cgroup empties as its processes are killed by their cleanups.
		for i := 0; i < 50 && os.Remove(dir) != nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
	})
	// Processes move themselves in, then run the server.
	inside := func(t *testing.T, port int) {
		start(t, "sh", "-c", `echo $$ > "$1/cgroup.procs" && exec "$2" -addr=127.0.0.1:$3 >/dev/null`,
			"sh", dir, bins.websr, strconv.Itoa(port))
		waitListening(t, port)
	}
	const n = 20

	t.Run("cgroup", func(t *testing.T) {
		rcv := otlptest.Start(t)
		w := startWeft(t, rcv, "--cgroup="+dir)
		_, outAddr := startServer(t, "-mode=nethttp")
		port := freePort(t)
		inside(t, port)
		want := getNumbered(t, fmt.Sprintf("http://127.0.0.1:%d", port), "in", n)
		getNumbered(t, "http://"+outAddr, "out", n)
		spans := waitSpans(t, rcv, n, 30*time.Second, func(s span) bool { return s.kind == tracepb.Span_SPAN_KIND_SERVER })
		byPID := serverSpansByPID(spans)
		pid := listenerPID(t, port)
		if len(byPID) != 1 || !sameSet(byPID[int64(pid)], want) {
			t.Errorf("server spans by pid %v, want only pid %d with %v:\n%s", byPID, pid, want, dump(spans))
		}
		if l := psLine(psOf(t, w), pid); !strings.Contains(l, "cgroup="+dir) {
			t.Errorf("weft ps line of %d = %q, want cgroup=%s", pid, l, dir)
		}
	})

	t.Run("container", func(t *testing.T) {
		rcv := otlptest.Start(t)
		port := freePort(t)
		inside(t, port)
		pid := listenerPID(t, port)
		w := startWeft(t, rcv, "--container="+id[:12])
		want := getNumbered(t, fmt.Sprintf("http://127.0.0.1:%d", port), "c", n)
		spans := waitSpans(t, rcv, n, 30*time.Second, func(s span) bool { return s.kind == tracepb.Span_SPAN_KIND_SERVER })
		byPID := serverSpansByPID(spans)
		if len(byPID) != 1 || !sameSet(byPID[int64(pid)], want) {
			t.Errorf("server spans by pid %v, want only pid %d with %v:\n%s", byPID, pid, want, dump(spans))
		}
		if l := psLine(psOf(t, w), pid); !strings.Contains(l, "container="+id[:12]) {
			t.Errorf("weft ps line of %d = %q, want container=%s", pid, l, id[:12])
		}
	})
}

// A selection that names nothing real stops weft at start-up with an
// error that says what is wrong.
func TestSelectBadInput(t *testing.T) {
	setup(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		flag, want string
	}{
		"pid":       {"--pid=" + strconv.Itoa(gone.Process.Pid), "no such process"},
		"cgroup":    {"--cgroup=" + t.TempDir(), "not a cgroup v2 directory"},
		"container": {"--container=0123456789abcdef", "no running process is in a cgroup named after it"},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(bins.weft, "run", c.flag).CombinedOutput()
			if code := exitCode(err); code == 0 || !strings.Contains(string(out), c.want) {
				t.Errorf("weft run %s: exit %d, output %q; want non-zero and %q", c.flag, code, out, c.want)
			}
		})
	}
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}
