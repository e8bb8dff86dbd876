package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// The JDKs the JVM agent must work on.
var jdks = map[string]string{
	"jdk17": "java",
	"jdk25": "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java",
}

var javaBuild struct {
	once sync.Once
	err  error
}

// buildJava builds the JVM agent and the demo services (both scripts are
// no-ops when nothing changed).
func buildJava(t *testing.T) {
	t.Helper()
	javaBuild.once.Do(func() {
		for _, script := range []string{"scripts/build-agent.sh", "scripts/build-demo.sh"} {
			cmd := exec.Command("bash", script)
			cmd.Dir = repoRoot()
			if b, err := cmd.CombinedOutput(); err != nil {
				javaBuild.err = fmt.Errorf("%s: %v\n%s", script, err, b)
				return
			}
		}
	})
	if javaBuild.err != nil {
		t.Fatal(javaBuild.err)
	}
}

func agentJar() string { return filepath.Join(repoRoot(), "pkg", "javaagent", "weft-agent.jar") }

func serviceJar(name string) string {
	return filepath.Join(repoRoot(), "demo", "services", name, "target", name+".jar")
}

// jvm is a running demo service.
type jvm struct {
	*proc
	url string
}

// startJVM runs a demo service on a free port and waits until it answers.
func startJVM(t *testing.T, java, service string, env []string, opts ...string) jvm {
	t.Helper()
	return startJVMJar(t, java, service, serviceJar(service), env, opts...)
}

// startJVMJar runs jar as service name (OTEL_SERVICE_NAME) on a free port
// and waits until it answers /health.
func startJVMJar(t *testing.T, java, name, jar string, env []string, opts ...string) jvm {
	t.Helper()
	port := freePort(t)
	// Its own temporary directory, removed after it stops: embedded
	// Tomcat leaves a tomcat.<port>.* directory there on every start.
	tmp := t.TempDir()
	args := append(append([]string{"-XX:+PreserveFramePointer", "-Djava.io.tmpdir=" + tmp}, opts...), "-jar", jar)
	p := &proc{cmd: exec.Command(java, args...), done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(), "OTEL_SERVICE_NAME="+name, "PORT="+strconv.Itoa(port)), env...)
	p.cmd.Stdout = p
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	// The JIT's symbol map that weft's profiler asks for: HotSpot writes
	// it to /tmp whatever java.io.tmpdir says. (Cleanups run last first:
	// this one after the JVM stopped.)
	perfMap := fmt.Sprintf("/tmp/perf-%d.map", p.cmd.Process.Pid)
	t.Cleanup(func() { os.Remove(perfMap) })
	t.Cleanup(p.stop)
	scheme, client := "http", http.DefaultClient
	if slices.Contains(env, "SERVER_SSL_ENABLED=true") { // Spring Boot serving HTTPS
		scheme = "https"
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	}
	j := jvm{proc: p, url: fmt.Sprintf("%s://127.0.0.1:%d", scheme, port)}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if !p.Alive() {
			t.Fatalf("%s exited:\n%s", name, p.Output())
		}
		if resp, err := client.Get(j.url + "/health"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return j
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s not answering after 60s:\n%s", name, p.Output())
	return j
}

// services is one backend with a front service (frontend or jfront).
type services struct {
	backend, front jvm
}

func startServices(t *testing.T, java, front string, env []string, opts ...string) services {
	t.Helper()
	b := startJVM(t, java, "backend", nil, opts...)
	f := startJVM(t, java, front, append([]string{"BACKEND_URL=" + b.url}, env...), opts...)
	return services{backend: b, front: f}
}

func (s services) pids() string { return fmt.Sprintf("%d,%d", s.backend.Pid(), s.front.Pid()) }

// warm drives a few requests through every endpoint (class loading, JIT,
// thread pools, pooled connections made under weft), then drops their
// spans.
func warm(t *testing.T, rcv *otlptest.Receiver, url string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		load(t, url+p, 40, 4)
	}
	quiesce(rcv, 20*time.Second)
	rcv.Reset()
}

// treeReport is what the spans of many requests to one endpoint say.
type treeReport struct {
	requests   int      // front SERVER spans for the path
	complete   int      // traces of exactly the expected tree
	misparents []string // traces holding another request's spans
}

// checkTrees groups spans by trace and checks each request's tree: the
// front's SERVER span, `clients` CLIENT spans under it, and one backend
// SERVER span under each CLIENT.
func checkTrees(spans []span, front, path string, clients int) treeReport {
	var r treeReport
	for trace, ss := range byTrace(spans) {
		var srv []span
		var cli, back []span
		for _, s := range ss {
			switch {
			case s.service == front && s.kind == tracepb.Span_SPAN_KIND_SERVER && s.attrs["url.path"] == path:
				srv = append(srv, s)
			case s.service == front && s.kind == tracepb.Span_SPAN_KIND_CLIENT:
				cli = append(cli, s)
			case s.service == "backend" && s.kind == tracepb.Span_SPAN_KIND_SERVER:
				back = append(back, s)
			}
		}
		r.requests += len(srv)
		if len(srv) > 1 || len(cli) > clients || len(back) > clients {
			r.misparents = append(r.misparents, fmt.Sprintf("trace %s:\n%s", trace, dump(ss)))
			continue
		}
		if len(srv) != 1 || len(cli) != clients || len(back) != clients || len(ss) != 1+2*clients {
			continue
		}
		ok := true
		ids := map[string]bool{}
		for _, c := range cli {
			ok = ok && c.parent == srv[0].id
			ids[c.id] = true
		}
		for _, b := range back {
			ok = ok && ids[b.parent]
			delete(ids, b.parent)
		}
		if ok {
			r.complete++
		}
	}
	return r
}

func anySpan(span) bool { return true }

// Without the agent a Ktor request's backend call leaves the thread that
// read the request: two traces. The thread-per-request control is whole.
func TestJVMWithoutAgentSplitsCoroutines(t *testing.T) {
	setup(t)
	buildJava(t)
	rcv := otlptest.Start(t)
	kt := startServices(t, "java", "frontend", nil)
	jf := startJVM(t, "java", "jfront", []string{"BACKEND_URL=" + kt.backend.url})
	startWeft(t, rcv, "--pid="+kt.pids()+","+strconv.Itoa(jf.Pid()))
	warm(t, rcv, kt.front.url, "/direct")
	warm(t, rcv, jf.url, "/call")

	get(t, kt.front.url+"/direct")
	got := waitSpans(t, rcv, 3, 30*time.Second, anySpan)
	if r := checkTrees(got, "frontend", "/direct", 1); r.complete != 0 || len(byTrace(got)) != 2 {
		t.Errorf("without the agent /direct should split into two traces, got %d traces:\n%s", len(byTrace(got)), dump(got))
	}

	rcv.Reset()
	get(t, jf.url+"/call")
	got = waitSpans(t, rcv, 3, 30*time.Second, anySpan)
	if r := checkTrees(got, "jfront", "/call", 1); r.complete != 1 {
		t.Errorf("thread-per-request /call should be one trace:\n%s", dump(got))
	}
}

// endpoint is a front path and the backend calls each request makes.
type endpoint struct {
	path    string
	clients int
}

var ktorEndpoints = []endpoint{{"/direct", 1}, {"/hop", 1}, {"/parallel", 2}}

// checkEndpoints sends one request per endpoint, then 200 at concurrency
// 32: every single request is one whole trace, ≥ 99 % under load, and no
// trace ever holds another request's spans.
func checkEndpoints(t *testing.T, rcv *otlptest.Receiver, front jvm, service string, eps []endpoint, n, conc int) {
	t.Helper()
	for _, ep := range eps {
		rcv.Reset()
		get(t, front.url+ep.path)
		want := 1 + 2*ep.clients
		got := waitSpans(t, rcv, want, 30*time.Second, anySpan)
		if r := checkTrees(got, service, ep.path, ep.clients); r.complete != 1 || len(got) != want {
			t.Errorf("%s: one request should be one whole trace:\n%s", ep.path, dump(got))
		}
	}
	for _, ep := range eps {
		rcv.Reset()
		load(t, front.url+ep.path, n, conc)
		want := n * (1 + 2*ep.clients)
		got := collectSpans(t, rcv, want, 60*time.Second)
		r := checkTrees(got, service, ep.path, ep.clients)
		t.Logf("%s: %d requests at c%d: %d whole traces, %d mixed", ep.path, n, conc, r.complete, len(r.misparents))
		if r.complete*100 < n*99 {
			t.Errorf("%s: %d of %d traces whole, want ≥ 99 %%; spans by service and kind: %v",
				ep.path, r.complete, n, countByKind(got))
		}
		if len(r.misparents) > 0 {
			t.Errorf("%s: %d traces hold another request's spans, first:\n%s", ep.path, len(r.misparents), r.misparents[0])
		}
	}
}

// countByKind counts spans by service and kind, to tell which side's
// spans a shortfall lacks.
func countByKind(ss []span) map[string]int {
	m := map[string]int{}
	for _, s := range ss {
		m[s.service+" "+strings.TrimPrefix(s.kind.String(), "SPAN_KIND_")]++
	}
	return m
}

// checkShared sends 50 requests from 5 concurrent clients to /shared: each
// job's backend call must sit under its own request, never another's.
func checkShared(t *testing.T, rcv *otlptest.Receiver, front jvm) {
	t.Helper()
	rcv.Reset()
	const n = 50
	load(t, front.url+"/shared", n, 5)
	got := collectSpans(t, rcv, 3*n, 60*time.Second)
	r := checkTrees(got, "frontend", "/shared", 1)
	t.Logf("/shared: %d requests from 5 clients: %d whole traces, %d mixed", n, r.complete, len(r.misparents))
	if len(r.misparents) > 0 {
		t.Errorf("/shared: a job's call landed under another request:\n%s", r.misparents[0])
	}
	if r.complete != n {
		t.Errorf("/shared: %d of %d jobs' calls under their own request", r.complete, n)
	}
}

func TestJVMAgentWholeTraces(t *testing.T) {
	setup(t)
	buildJava(t)
	for _, name := range []string{"jdk17", "jdk25"} {
		t.Run(name, func(t *testing.T) { checkWholeTraces(t, jdks[name], nil) })
	}
}

// The same on Ktor's CIO server engine, which reads a request in a reader
// coroutine and handles it in another, launched by the connection's
// pipeline coroutine.
func TestJVMAgentWholeTracesCIO(t *testing.T) {
	setup(t)
	buildJava(t)
	for _, name := range []string{"jdk17", "jdk25"} {
		t.Run(name, func(t *testing.T) { checkWholeTraces(t, jdks[name], []string{"FRONTEND_ENGINE=cio"}) })
	}
}

// checkWholeTraces runs the frontend (environment env) and the backend with
// the agent under weft and checks every Ktor endpoint and /shared. The
// services start before weft, with the agent's re-registration off: the
// threads that registered then are followed through the agent's table.
func checkWholeTraces(t *testing.T, java string, env []string) {
	t.Helper()
	rcv := otlptest.Start(t)
	agent := []string{"-javaagent:" + agentJar() + "=refresh=0"}
	kt := startServices(t, java, "frontend", env, agent...)
	startWeft(t, rcv, "--pid="+kt.pids())
	warm(t, rcv, kt.front.url, "/direct", "/hop", "/parallel", "/shared")
	checkEndpoints(t, rcv, kt.front, "frontend", ktorEndpoints, 200, 32)
	checkShared(t, rcv, kt.front)
	out := kt.front.Output()
	if strings.Contains(out, "weft-agent: inactive") {
		t.Errorf("agent inactive:\n%s", out)
	}
	for _, e := range env {
		if engine, ok := strings.CutPrefix(e, "FRONTEND_ENGINE="); ok && !strings.Contains(out, "("+engine+")") {
			t.Errorf("frontend not on the %s engine:\n%s", engine, out)
		}
	}
}

// Executor hand-offs and virtual threads in the plain-Java service.
func TestJVMAgentExecutorsAndVirtualThreads(t *testing.T) {
	setup(t)
	buildJava(t)
	for _, mode := range []string{"pool", "virtual"} {
		t.Run(mode, func(t *testing.T) {
			rcv := otlptest.Start(t)
			s := startServices(t, jdks["jdk25"], "jfront", []string{"JFRONT_MODE=" + mode}, "-javaagent:"+agentJar())
			startWeft(t, rcv, "--pid="+s.pids())
			warm(t, rcv, s.front.url, "/call")
			checkEndpoints(t, rcv, s.front, "jfront", []endpoint{{"/call", 1}}, 100, 16)
		})
	}
}

// weft attaches the agent to JVMs that started without it: by hand with
// `weft java attach` (JDK 17), and by itself with --java-agent=attach
// when it first sees them on the network (JDK 25).
func TestJVMAgentRuntimeAttach(t *testing.T) {
	setup(t)
	buildJava(t)
	t.Run("command/jdk17", func(t *testing.T) {
		rcv := otlptest.Start(t)
		kt := startServices(t, jdks["jdk17"], "frontend", nil)
		startWeft(t, rcv, "--pid="+kt.pids())
		for _, p := range []*proc{kt.backend.proc, kt.front.proc} {
			out, err := exec.Command(bins.weft, "java", "attach", strconv.Itoa(p.Pid())).CombinedOutput()
			if err != nil {
				t.Fatalf("weft java attach %d: %v\n%s", p.Pid(), err, out)
			}
		}
		warm(t, rcv, kt.front.url, "/direct", "/hop", "/parallel")
		checkEndpoints(t, rcv, kt.front, "frontend", ktorEndpoints, 200, 32)
	})
	t.Run("auto/jdk25", func(t *testing.T) {
		rcv := otlptest.Start(t)
		kt := startServices(t, jdks["jdk25"], "frontend", nil)
		w := startWeft(t, rcv, "--pid="+kt.pids(), "--java-agent=attach")
		// The first requests make weft see both JVMs and attach to them.
		warm(t, rcv, kt.front.url, "/direct")
		deadline := time.Now().Add(60 * time.Second)
		for strings.Count(w.Output(), "java agent attached") < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("weft did not attach the agent to both JVMs:\n%s", w.Output())
			}
			time.Sleep(200 * time.Millisecond)
		}
		warm(t, rcv, kt.front.url, "/direct", "/hop", "/parallel")
		checkEndpoints(t, rcv, kt.front, "frontend", ktorEndpoints, 200, 32)
	})
	// A keep-alive connection the CIO server accepted before the agent came
	// is not known as a server's until its first request after the attach:
	// from the next one on, its requests are whole traces.
	t.Run("command/cio-keepalive/jdk25", func(t *testing.T) {
		rcv := otlptest.Start(t)
		kt := startServices(t, jdks["jdk25"], "frontend", []string{"FRONTEND_ENGINE=cio"})
		startWeft(t, rcv, "--pid="+kt.pids())
		var dials atomic.Int32
		dialer := &net.Dialer{}
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			MaxConnsPerHost: 1,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return dialer.DialContext(ctx, network, addr)
			},
		}}
		one := func() {
			resp, err := client.Get(kt.front.url + "/direct")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("/direct answered %s", resp.Status)
			}
		}
		for range 5 {
			one()
		}
		for _, p := range []*proc{kt.backend.proc, kt.front.proc} {
			out, err := exec.Command(bins.weft, "java", "attach", strconv.Itoa(p.Pid())).CombinedOutput()
			if err != nil {
				t.Fatalf("weft java attach %d: %v\n%s", p.Pid(), err, out)
			}
		}
		one() // its handler makes the connection known
		quiesce(rcv, 20*time.Second)
		rcv.Reset()
		const n = 20
		for range n {
			one()
		}
		if d := dials.Load(); d != 1 {
			t.Fatalf("the client opened %d connections, want the one from before the attach", d)
		}
		got := waitSpans(t, rcv, 3*n, 30*time.Second, anySpan)
		r := checkTrees(got, "frontend", "/direct", 1)
		t.Logf("/direct on a connection from before the attach: %d of %d whole traces, %d mixed", r.complete, n, len(r.misparents))
		if r.complete != n || len(r.misparents) > 0 {
			t.Errorf("%d of %d traces whole, %d mixed:\n%s", r.complete, n, len(r.misparents), dump(got))
		}
	})
}

// With its native library missing the agent steps aside: every request
// answers as without it, and it says so once.
func TestJVMAgentFailOpen(t *testing.T) {
	setup(t)
	buildJava(t)
	kt := startServices(t, "java", "frontend", nil, "-javaagent:"+agentJar(), "-Dweft.agent.native=/nonexistent/libweft_jni.so")
	for _, p := range []string{"/direct", "/hop", "/parallel", "/shared"} {
		load(t, kt.front.url+p, 50, 5)
	}
	resp, err := http.Get(kt.front.url + "/direct")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "work done") {
		t.Errorf("/direct answered %d %q", resp.StatusCode, body)
	}
	out := kt.front.Output()
	if n := strings.Count(out, "weft-agent: inactive"); n != 1 {
		t.Errorf("agent should say once why it is inactive, said it %d times:\n%s", n, out)
	}
}
