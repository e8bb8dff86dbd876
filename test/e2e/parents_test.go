package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// numberedLoad sends GET base+"N" for N = 1..n at the given concurrency
// from this (untraced) process, so that every span names its request.
func numberedLoad(t *testing.T, base string, n, concurrency int) {
	t.Helper()
	loadEach(t, func(i int64) string { return fmt.Sprintf("%s%d", base, i) }, n, concurrency)
}

// parentReport sorts every backend call of numbered requests: right when
// the backend's server span is the child of the front's client span,
// which is the child of the front's server span of the same request;
// wrong when any link names another request (or a span that does not
// exist); split when the front's client span has no parent.
type parentReport struct {
	right, wrong, split int
	splitClients        int // front client spans without a parent
	problems            []string
}

func (r parentReport) String() string {
	s := fmt.Sprintf("right %d, wrong %d, split %d", r.right, r.wrong, r.split)
	for i, p := range r.problems {
		if i == 10 {
			s += fmt.Sprintf("\n  … and %d more", len(r.problems)-10)
			break
		}
		s += "\n  " + p
	}
	return s
}

// requestOf is the number in a path: /req/12 → 12, /work/12/a → 12.
func requestOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[1]
}

func checkParents(spans []span, front, backend string) parentReport {
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.id] = s
	}
	var r parentReport
	for _, s := range spans {
		if s.service == front && s.kind == tracepb.Span_SPAN_KIND_CLIENT && s.parent == "" {
			r.splitClients++
		}
		if s.service != backend || s.kind != tracepb.Span_SPAN_KIND_SERVER {
			continue
		}
		path, _ := s.attrs["url.path"].(string)
		n := requestOf(path)
		cli, ok := byID[s.parent]
		if !ok || cli.service != front || cli.kind != tracepb.Span_SPAN_KIND_CLIENT || cli.attrs["url.path"] != path {
			r.wrong++
			r.problems = append(r.problems, fmt.Sprintf("backend %s: parent %q is not the front's call of it", path, s.parent))
			continue
		}
		if cli.parent == "" {
			r.split++
			continue
		}
		srv, ok := byID[cli.parent]
		srvPath, _ := srv.attrs["url.path"].(string)
		if !ok || srv.service != front || srv.kind != tracepb.Span_SPAN_KIND_SERVER || requestOf(srvPath) != n ||
			srv.trace != s.trace || cli.trace != s.trace {
			r.wrong++
			r.problems = append(r.problems, fmt.Sprintf("call %s under %q (%s)", path, srvPath, cli.parent))
			continue
		}
		r.right++
	}
	return r
}

// frontPath is a front service's path and the backend calls each of its
// requests makes.
type frontPath struct {
	path  string
	calls int
}

// checkNumberedEndpoints sends 300 numbered requests at concurrency 32 to
// each endpoint of the front service ("front" at URL front, calling
// websrv with the same scheme) and requires every backend call under its
// own request, none under another.
func checkNumberedEndpoints(t *testing.T, w *weft, rcv *otlptest.Receiver, front string, eps []frontPath) {
	t.Helper()
	const n, conc = 300, 32
	scheme, _, _ := strings.Cut(front, "://")
	for _, ep := range eps {
		rcv.Reset()
		numberedLoad(t, front+ep.path, n, conc)
		spans := collectSpans(t, rcv, n*(1+2*ep.calls), 60*time.Second)
		for _, s := range spans {
			if s.attrs["url.scheme"] != scheme {
				t.Errorf("%s: span %s is not %s", ep.path, s, scheme)
				break
			}
		}
		r := checkParents(spans, "front", "websrv")
		m, _ := w.Metrics()
		t.Logf("%s: %s; refused: ambiguous %d, unknown %d, ended %d", ep.path, r, m["parent_refused_ambiguous"],
			m["parent_refused_unknown_runtime"], m["parent_refused_ended"])
		if r.wrong != 0 || r.right != n*ep.calls {
			t.Errorf("%s: %s", ep.path, r)
		}
	}
}

// checkLateCalls sends 50 numbered requests to the front's /spawn/, whose
// call leaves 50 ms after the response: every such call starts its own
// trace, and each is counted as made for an ended request.
func checkLateCalls(t *testing.T, w *weft, rcv *otlptest.Receiver, front string) {
	t.Helper()
	const late = 50
	before, _ := w.Metrics()
	rcv.Reset()
	numberedLoad(t, front+"/spawn/", late, 8)
	spans := collectSpans(t, rcv, 3*late, 60*time.Second)
	r := checkParents(spans, "front", "websrv")
	m, _ := w.Metrics()
	ended := m["parent_refused_ended"] - before["parent_refused_ended"]
	t.Logf("/spawn/: %s; refused as ended %d", r, ended)
	if r.wrong != 0 || r.right != 0 || r.split != late || ended != late {
		t.Errorf("late calls: %s; refused as ended %d, want %d split and counted", r, ended, late)
	}
}

// goToolchains are the Go versions the goroutine hooks are tested with:
// this machine's and the newest the module proxy serves (probed where
// newproc1 calls casgstatus), 1.23 (once newproc1 stored the new
// goroutine's goid, reading parentGoid) and Debian's 1.19 (at its entry
// and there).
var goToolchains = []struct {
	name string
	cmd  string   // go command
	env  []string // extra environment
}{
	{"go-default", "go", nil},
	{"go1.27", "go", []string{"GOTOOLCHAIN=go1.27.3"}},
	{"go1.23", "go", []string{"GOTOOLCHAIN=go1.23.12"}}, // probed past newproc1's goid store
	{"go1.19", "/usr/lib/go-1.19/bin/go", []string{"GOTOOLCHAIN=local"}},
}

var goAsync struct {
	once sync.Once
	bins map[string]string
	err  error
}

// buildGoAsync builds testdata/goasync with each toolchain, and stripped
// with the default one. In a QEMU guest (no Go toolchain) the binaries
// come from WEFT_E2E_BIN_DIR as goasync-<name>: the default build only.
func buildGoAsync(t *testing.T) map[string]string {
	t.Helper()
	if dir := os.Getenv("WEFT_E2E_BIN_DIR"); dir != "" {
		return map[string]string{"go-default": filepath.Join(dir, "goasync-go-default")}
	}
	goAsync.once.Do(func() {
		dir, err := sharedTempDir("weft-goasync-")
		if err != nil {
			goAsync.err = err
			return
		}
		goAsync.bins = map[string]string{}
		src := filepath.Join(repoRoot(), "test", "e2e", "testdata", "goasync")
		type job struct {
			name, cmd string
			env, args []string
		}
		jobs := []job{{name: "go-stripped", cmd: "go", args: []string{"-ldflags=-s -w"}}}
		for _, tc := range goToolchains {
			jobs = append(jobs, job{name: tc.name, cmd: tc.cmd, env: tc.env})
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, j := range jobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := filepath.Join(dir, j.name)
				cmd := exec.Command(j.cmd, append(append([]string{"build", "-o", out}, j.args...), ".")...)
				cmd.Dir = src
				cmd.Env = append(os.Environ(), j.env...)
				b, err := cmd.CombinedOutput()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					goAsync.err = fmt.Errorf("build goasync with %s: %v\n%s", j.name, err, b)
					return
				}
				goAsync.bins[j.name] = out
			}()
		}
		wg.Wait()
	})
	if goAsync.err != nil {
		t.Fatal(goAsync.err)
	}
	return goAsync.bins
}

// Go: goroutine-keyed parents. 300 requests at concurrency 32 whose
// handlers wait, then call a backend through net/http's client (kept-alive
// and fresh connections, written by the transport's own goroutines), and
// as many whose handler calls twice from two goroutines: every backend
// call under the right request, none under another.
func TestGoAsyncParents(t *testing.T) {
	setup(t)
	bins := buildGoAsync(t)
	for _, name := range []string{"go-default", "go-stripped", "go1.27", "go1.23", "go1.19"} {
		if bins[name] == "" {
			continue // in a guest
		}
		t.Run(name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			backend, backAddr := startServer(t, "-mode=nethttp")
			cmd := exec.Command(bins[name], "-backend="+backAddr)
			cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=front")
			front, frontAddr := startListener(t, cmd)
			w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
			if !strings.Contains(w.Output(), "mode=goroutine") {
				t.Fatalf("the front was not followed by goroutine:\n%s", w.Output())
			}
			checkNumberedEndpoints(t, w, rcv, "http://"+frontAddr, []frontPath{{"/req/", 1}, {"/fan/", 2}})
		})
	}
}

// A Go program started after weft attached gets the uprobe that follows
// goroutine creation (a trap per goroutine, one per request in net/http's
// server) only at its first outgoing connection. The backend, started
// after weft too, never calls out and never gets it. The front's first
// request starts its two goroutines before that connection: their calls
// start their own traces (counted as client roots); once the hook is on,
// 300 requests with one call and 300 with two calls from two goroutines
// are each right.
func TestGoCreationFollowedFromFirstConnection(t *testing.T) {
	setup(t)
	goBins := buildGoAsync(t)
	rcv := otlptest.Start(t)
	front := goBins["go-default"]
	// A copy of websrv of its own: the other tests' run beside this one.
	server := filepath.Join(t.TempDir(), "websrv-calls-nobody")
	if b, err := os.ReadFile(bins.websr); err != nil {
		t.Fatal(err)
	} else if err := os.WriteFile(server, b, 0o755); err != nil {
		t.Fatal(err)
	}
	w := startWeft(t, rcv, "--exe=^("+regexp.QuoteMeta(front)+"|"+regexp.QuoteMeta(server)+")$")
	bcmd := exec.Command(server, "-mode=nethttp")
	bcmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=websrv")
	backend, backAddr := startListener(t, bcmd)
	cmd := exec.Command(front, "-backend="+backAddr)
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=front")
	fp, frontAddr := startListener(t, cmd)
	deferred := "goroutine creation followed from its first outgoing connection"
	for _, pid := range []int{fp.Pid(), backend.Pid()} {
		line := waitLogLine(t, w, "msg=correlation ", fmt.Sprintf(" pid=%d ", pid))
		if !strings.Contains(line, "mode=goroutine") || !strings.Contains(line, deferred) {
			t.Fatalf("process %d is not followed by goroutine, its creation from its first connection: %s", pid, line)
		}
	}
	before, _ := w.Metrics()
	get(t, "http://"+frontAddr+"/fan/1000")
	spans := collectSpans(t, rcv, 5, 30*time.Second)
	if r := checkParents(spans, "front", "websrv"); r.right != 0 || r.wrong != 0 || r.split != 2 {
		t.Fatalf("the first request's calls: %s; want both split", r)
	}
	after, _ := w.Metrics()
	if roots := after["spans_client_root"] - before["spans_client_root"]; roots != 2 {
		t.Errorf("spans_client_root grew by %d, want 2", roots)
	}
	// The event that attached the hook came before the calls' own.
	waitLogLine(t, w, `msg="goroutine creation followed" `, fmt.Sprintf(" pid=%d ", fp.Pid()), `why="since its first outgoing connection"`)
	checkNumberedEndpoints(t, w, rcv, "http://"+frontAddr, []frontPath{{"/req/", 1}, {"/fan/", 2}})
	if hasLogLine(w, `msg="goroutine creation followed" `, fmt.Sprintf(" pid=%d ", backend.Pid())) {
		t.Errorf("the backend, which never called out, had its goroutine creation followed:\n%s", w.Output())
	}
}

// waitLogLine waits for weft's log line that contains each of parts and
// returns it.
func waitLogLine(t *testing.T, w *weft, parts ...string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if line, ok := logLine(w, parts...); ok {
			return line
		}
		if time.Now().After(deadline) {
			t.Fatalf("no log line with %q:\n%s", parts, w.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hasLogLine(w *weft, parts ...string) bool {
	_, ok := logLine(w, parts...)
	return ok
}

func logLine(w *weft, parts ...string) (string, bool) {
	for _, line := range strings.Split(w.Output(), "\n") {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
			return line, true
		}
	}
	return "", false
}

// A runtime weft has no support for, serving many requests on one thread
// (a plain asyncio loop): while its thread holds two live requests, its
// backend calls get no parent, and the refusal counter says so for each;
// never a wrong parent.
func TestAmbiguousThreadFailsClosed(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	backend, backAddr := startServer(t, "-mode=nethttp")
	cmd := exec.Command("python3", filepath.Join(repoRoot(), "test", "e2e", "testdata", "asyncloop.py"), backAddr)
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=front")
	front, frontAddr := startListener(t, cmd)
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
	const n = 300
	numberedLoad(t, "http://"+frontAddr+"/req/", n, 32)
	spans := collectSpans(t, rcv, 3*n, 60*time.Second)
	r := checkParents(spans, "front", "websrv")
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; refused as ambiguous: %d", r, m["parent_refused_ambiguous"])
	if r.wrong != 0 || r.right+r.split != n {
		t.Errorf("want no wrong parent and %d calls: %s", n, r)
	}
	if r.split == 0 {
		t.Errorf("32 requests at once on one thread gave no split trace: the case is not ambiguous")
	}
	if got := m["parent_refused_ambiguous"]; got != uint64(r.splitClients) {
		t.Errorf("refusal counter %d, parentless client spans %d", got, r.splitClients)
	}
}

// nginxConf proxies /req/N to the backend's /work/N over a fresh upstream
// connection per request (HTTP/1.0, nginx's default) and /ka/N over a
// keepalive pool.
const nginxConf = `daemon off;
master_process on;
worker_processes %s;
pid %s/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[2]s/body;
	proxy_temp_path %[2]s/proxy;
	fastcgi_temp_path %[2]s/fastcgi;
	uwsgi_temp_path %[2]s/uwsgi;
	scgi_temp_path %[2]s/scgi;
	upstream fresh { server %[3]s; }
	upstream pool { server %[3]s; keepalive 8; }
	server {
		listen 127.0.0.1:%[4]d reuseport; # workers share connections by hash
		location /req/ { proxy_pass http://fresh/work/; }
		location /ka/ {
			proxy_pass http://pool/work/;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
`

// startNginx runs nginx with workers workers and returns the master, the
// worker pids and the address.
func startNginx(t *testing.T, workers, backend string) (*proc, []int, string) {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	dir := t.TempDir()
	port := freePort(t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(nginxConf, workers, dir, backend, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "-c", conf, "-e", "stderr")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	want, err := strconv.Atoi(workers)
	if workers == "auto" {
		want, err = runtime.NumCPU(), nil
	}
	if err != nil {
		t.Fatalf("nginx workers %q: %v", workers, err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		kids := childPIDs(p.Pid())
		if listening(port) && len(kids) == want {
			return p, kids, addr
		}
		if !p.Alive() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nginx did not come up with %d workers:\n%s", want, p.Output())
	return nil, nil, ""
}

// reloadNginx has nginx's master reload its configuration and returns the
// workers it started, once those it had (old) are gone.
func reloadNginx(t *testing.T, master *proc, old []int) []int {
	t.Helper()
	if err := master.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		kids := childPIDs(master.Pid())
		if len(kids) == len(old) && !slices.ContainsFunc(kids, func(k int) bool { return slices.Contains(old, k) }) {
			return kids
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nginx's reload did not replace workers %v: now %v\n%s", old, childPIDs(master.Pid()), master.Output())
	return nil
}

// waitWorkerHooks waits until weft has set up each of nginx's workers
// with its hooks (the correlation it logs names why).
func waitWorkerHooks(t *testing.T, w *weft, kids []int, why string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for _, k := range kids {
		want := fmt.Sprintf("pid=%d mode=thread why=\"%s", k, why)
		for !strings.Contains(w.Output(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("nginx worker %d: no hooks (%s):\n%s", k, want, w.Output())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// childPIDs lists a process's children.
func childPIDs(pid int) []int {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// nginx: each upstream request under the downstream request it proxies,
// on fresh upstream connections and from a keepalive pool, with one worker
// and with one per CPU; the backend waits 0-10 ms so that a worker holds
// many requests at once. The workers of one per CPU are those a reload
// started after weft attached: forked by the master, they need hooks of
// their own (uprobes are per process).
func TestNginxParents(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		name, workers string
		reload        bool
	}{{"workers=1", "1", false}, {"workers=auto,reloaded", "auto", true}} {
		t.Run(c.name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			backend, backAddr := startServer(t, "-mode=nethttp")
			master, kids, addr := startNginx(t, c.workers, backAddr)
			pids := []string{strconv.Itoa(master.Pid()), strconv.Itoa(backend.Pid())}
			for _, k := range kids {
				pids = append(pids, strconv.Itoa(k))
			}
			w := startWeft(t, rcv, "--pid="+strings.Join(pids, ","))
			defer func() {
				if t.Failed() {
					t.Logf("weft:\n%s", w.Output())
				}
			}()
			if c.reload {
				kids = reloadNginx(t, master, kids)
			}
			waitWorkerHooks(t, w, kids, `nginx: upstream requests tied`)
			const n = 300
			for _, ep := range []string{"/req/", "/ka/"} {
				rcv.Reset()
				numberedLoad(t, "http://"+addr+ep, n, 32)
				spans := collectSpans(t, rcv, 3*n, 60*time.Second)
				r := checkParents(spans, "nginx", "websrv")
				m, _ := w.Metrics()
				t.Logf("%s: %s; refused as ambiguous %d", ep, r, m["parent_refused_ambiguous"])
				if r.wrong != 0 || r.right != n {
					t.Errorf("%s: %s", ep, r)
				}
			}
		})
	}
}

// A goroutine that outlives its request never takes the next request of
// the connection goroutine that created it: /spawn/1 leaves a goroutine
// that calls 50 ms later, while /slow/2, sent on the same kept-alive
// connection right after, is live on the same connection goroutine. The
// late call is a root, counted as refused because its request ended.
func TestGoGoroutineOutlivesRequest(t *testing.T) {
	setup(t)
	bins := buildGoAsync(t)
	rcv := otlptest.Start(t)
	backend, backAddr := startServer(t, "-mode=nethttp")
	cmd := exec.Command(bins["go-default"], "-backend="+backAddr)
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=front")
	front, frontAddr := startListener(t, cmd)
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
	// A first call, from the handler's own goroutine, makes the front's
	// first connection: its goroutines' creation is followed from then
	// on (gocreation.go).
	get(t, "http://"+frontAddr+"/req/0")
	waitSpans(t, rcv, 3, 30*time.Second, anySpan)
	rcv.Reset()
	tr := &http.Transport{MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, path := range []string{"/spawn/1", "/slow/2"} {
		resp, err := client.Get("http://" + frontAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// front: 2 server spans, 2 client spans; backend: 2 server spans
	spans := waitSpans(t, rcv, 6, 30*time.Second, anySpan)
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.id] = s
	}
	for _, s := range spans {
		if s.service != "front" || s.kind != tracepb.Span_SPAN_KIND_CLIENT {
			continue
		}
		switch s.attrs["url.path"] {
		case "/work/late-1":
			if s.parent != "" {
				t.Errorf("the late call has parent %s (%v):\n%s", s.parent, byID[s.parent].attrs["url.path"], dump(spans))
			}
		case "/work/2":
			if p := byID[s.parent]; p.attrs["url.path"] != "/slow/2" {
				t.Errorf("/slow/2's call is not its child:\n%s", dump(spans))
			}
		}
	}
	m, _ := w.Metrics()
	if m["parent_refused_ended"] != 1 {
		t.Errorf("parent_refused_ended = %d, want 1", m["parent_refused_ended"])
	}
}
