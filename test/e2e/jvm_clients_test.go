package e2e

import (
	"fmt"
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
)

func testAppJar(name string) string {
	return filepath.Join(repoRoot(), "test", "apps", "jvm", name, "target", name+".jar")
}

// jvmApp is a test app (test/apps/jvm) as one configuration runs it: each
// request /<client>/N makes one backend call /work/N/<client>, /fan/N
// makes three at once, and each extra route its own number of calls.
type jvmApp struct {
	name, jar string
	env       []string
	clients   []string
	extra     []frontPath
	modules   []string // the agent modules its log must say applied
	// only, when set, limits the runs to these "jdk/load" pairs.
	only []string
}

func (a jvmApp) routes() []frontPath {
	var routes []frontPath
	for _, c := range a.clients {
		routes = append(routes, frontPath{"/" + c + "/", 1})
	}
	return append(append(routes, frontPath{"/fan/", 3}), a.extra...)
}

// Every client each app has: its own framework's, the common Java ones,
// and the other family's (Reactor Netty's HttpClient from Ktor, Ktor's
// engines from Spring).
var ktorClients = []string{"cio", "ktor-okhttp", "ktor-java", "ktor-apache5", "okhttp-execute", "okhttp-enqueue",
	"jdk-send", "jdk-sendasync", "urlconnection", "apache5-classic", "apache5-async", "reactor-netty"}

var springClients = []string{"okhttp-execute", "jdk-send", "urlconnection", "apache5-classic",
	"okhttp-enqueue", "jdk-sendasync", "apache5-async", "webclient",
	"ktor-cio", "ktor-okhttp", "ktor-java", "ktor-apache5"}

// checkClientParents sends 200 numbered requests at concurrency 32 to each
// client route of front (service name "front", its backend's backend) and
// to its fan-out route (three calls at once): every backend call under its
// own request, none under another, none split; every call of scheme, and
// of HTTP version proto unless it is "".
func checkClientParents(t *testing.T, w *weft, rcv *otlptest.Receiver, front jvm, backend, scheme, proto string,
	routes []frontPath) {
	t.Helper()
	const n, conc = 200, 32
	for _, ep := range routes {
		rcv.Reset()
		before, _ := w.Metrics()
		numberedLoad(t, front.url+ep.path, n, conc)
		spans := collectSpans(t, rcv, n*(1+2*ep.calls), 60*time.Second)
		for _, s := range spans {
			if (s.kind == tracepb.Span_SPAN_KIND_CLIENT || s.service == backend) && (s.attrs["url.scheme"] != scheme ||
				proto != "" && s.attrs["network.protocol.version"] != proto) {
				t.Errorf("%s: span %s is not %s %s", ep.path, s, scheme, proto)
				break
			}
		}
		r := checkParents(spans, "front", backend)
		m, _ := w.Metrics()
		roots := m["spans_client_root"] - before["spans_client_root"]
		t.Logf("%s: %s; client spans that started a trace %d; refused: ambiguous %d, unknown %d, ended %d",
			ep.path, r, roots, m["parent_refused_ambiguous"], m["parent_refused_unknown_runtime"], m["parent_refused_ended"])
		if r.wrong != 0 || r.split != 0 || r.right != n*ep.calls {
			t.Errorf("%s: right %d, wrong %d, split %d of %d calls; spans by service and kind: %v",
				ep.path, r.right, r.wrong, r.split, n*ep.calls, countByKind(spans))
			logLossCounters(t, "over the route", before, m)
			// A connection broken as it opened breaks in the route's
			// warm-up, which is not counted above.
			logLossCounters(t, "since weft started", nil, m)
		}
		// Every split is counted, and nothing else is.
		if roots != uint64(r.splitClients) {
			t.Errorf("%s: weft_spans_client_root grew by %d, %d client spans without a parent", ep.path, roots, r.splitClients)
		}
	}
}

// The JDK/load pairs split in two halves: an app's two servers run one
// half each, so every server runs on both JDKs and with both ways of
// loading the agent, and every pair runs once per app. (The full matrix
// doubled the suite's time, a quarter of test/e2e's, and its two extra
// pairs per server repeat what the halves already combine.)
var (
	diagonal     = []string{"jdk17/javaagent", "jdk25/attach"}
	antidiagonal = []string{"jdk17/attach", "jdk25/javaagent"}
)

// The Ktor test apps (Ktor 2.3 with OkHttp 4, Ktor 3.5 with OkHttp 5) call
// their backend through every JVM client they have, served by Netty and
// by CIO.
func TestJVMClientsKtor(t *testing.T) {
	clients := []string{"okhttp-4", "jdk-httpclient", "apache-httpclient-5", "kotlinx-coroutines", "reactor-netty-client"}
	netty := append([]string{"netty"}, clients...)
	cio := append([]string{"ktor-cio"}, clients...)
	// Two calls in a row from a flow that flowOn runs on Dispatchers.IO.
	flow := []frontPath{{"/flow/", 2}}
	var apps []jvmApp
	for _, v := range []string{"ktor2", "ktor3"} {
		apps = append(apps,
			jvmApp{name: v, jar: testAppJar(v), clients: ktorClients, extra: flow, modules: netty, only: antidiagonal},
			jvmApp{name: v + "-cio", jar: testAppJar(v), env: []string{"KTOR_ENGINE=cio"},
				clients: ktorClients, extra: flow, modules: cio, only: diagonal})
	}
	runJVMClients(t, apps)
}

// The Spring Boot test app, served by Spring MVC on Tomcat and by WebFlux
// on Reactor Netty, calls its backend through every JVM client it has.
func TestJVMClientsSpring(t *testing.T) {
	jar := testAppJar("spring")
	runJVMClients(t, []jvmApp{
		{name: "mvc", jar: jar, env: []string{"WEB_STACK=mvc"}, clients: springClients, only: diagonal,
			modules: []string{"tomcat", "okhttp-4", "jdk-httpclient", "apache-httpclient-5", "reactor-netty-client", "jdk-executors", "kotlinx-coroutines"}},
		{name: "webflux", jar: jar, env: []string{"WEB_STACK=webflux"}, clients: springClients, only: antidiagonal,
			modules: []string{"netty", "okhttp-4", "jdk-httpclient", "apache-httpclient-5", "reactor-netty-client", "jdk-executors", "kotlinx-coroutines"}},
	})
}

// runJVMClients runs each app in front of the demo backend on JDK 17 and
// JDK 25, with the agent loaded by -javaagent and attached at run time
// (`weft java attach`), and checks every client's parents.
func runJVMClients(t *testing.T, apps []jvmApp) {
	setup(t)
	buildJava(t)
	for _, app := range apps {
		for _, name := range []string{"jdk17", "jdk25"} {
			for _, load := range []string{"javaagent", "attach"} {
				if app.only != nil && !slices.Contains(app.only, name+"/"+load) {
					continue
				}
				t.Run(app.name+"/"+name+"/"+load, func(t *testing.T) {
					rcv := otlptest.Start(t)
					var opts []string
					if load == "javaagent" {
						opts = []string{"-javaagent:" + agentJar()}
					}
					back := startJVMJar(t, jdks[name], "backend", serviceJar("backend"), nil, opts...)
					front := startJVMJar(t, jdks[name], "front", app.jar, append([]string{"BACKEND_URL=" + back.url}, app.env...), opts...)
					w := startWeft(t, rcv, "--pid="+strconv.Itoa(back.Pid())+","+strconv.Itoa(front.Pid()))
					if load == "attach" {
						for _, p := range []*proc{back.proc, front.proc} {
							out, err := exec.Command(bins.weft, "java", "attach", strconv.Itoa(p.Pid())).CombinedOutput()
							if err != nil {
								t.Fatalf("weft java attach %d: %v\n%s", p.Pid(), err, out)
							}
						}
					}
					routes := app.routes()
					// Warm-up: class loading, JIT, and every client's pooled
					// connections opened under weft.
					for _, r := range routes {
						numberedLoad(t, front.url+r.path, 40, 8)
					}
					quiesce(rcv, 20*time.Second)
					checkClientParents(t, w, rcv, front, "backend", "http", "", routes)
					checkModulesApplied(t, front, app.modules...)
				})
			}
		}
	}
}

// checkModulesApplied requires the JVM's log to say that each module
// applied, and no class to have failed to instrument.
func checkModulesApplied(t *testing.T, j jvm, modules ...string) {
	t.Helper()
	out := j.Output()
	for _, m := range modules {
		if !strings.Contains(out, "weft-agent: module "+m+" (") {
			t.Errorf("the log does not say module %s applied:\n%s", m, out)
		}
	}
	if strings.Contains(out, "weft-agent: could not instrument") || strings.Contains(out, "weft-agent: inactive") {
		t.Errorf("agent trouble:\n%s", out)
	}
}

// The JVM's HTTP/2 clients without TLS: the Spring MVC app, on JDK 17 and
// 25, calls with Reactor Netty (Spring's WebClient), OkHttp and Apache's
// async client by prior knowledge (websrv) and with the JDK's HttpClient
// by upgrade (h2app's h2c server, as the JDK offers it on http URLs). Both open several connections under
// the burst, whose streams share ids and are written by one thread:
// Reactor Netty's each claimed where its pipeline's head flushes them, the
// JDK's where the socket write carries their HEADERS (H2Streams). Every
// call under its own request.
func TestJVMHTTP2Cleartext(t *testing.T) {
	setup(t)
	buildJava(t)
	for _, name := range []string{"jdk17", "jdk25"} {
		for _, tc := range []struct {
			name, backend string
			cmd           func() *exec.Cmd
			clients       []string
			modules       []string
		}{
			{"prior-knowledge", "websrv", func() *exec.Cmd { return exec.Command(bins.websr, "-mode=nethttp", "-h2") },
				[]string{"webclient2c", "okhttp-h2c", "apache5-h2c"},
				[]string{"netty-http2-client", "reactor-netty-http2-client", "okhttp-4", "apache-httpclient-5"}},
			{"upgrade", "h2backend", func() *exec.Cmd {
				cmd := exec.Command(bins.h2app, "-mode=h2c-upgrade-server")
				cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=h2backend")
				return cmd
			}, []string{"jdk2-sendasync"}, []string{"jdk-httpclient"}},
		} {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				rcv := otlptest.Start(t)
				backend, backAddr := startListener(t, tc.cmd())
				front := startJVMJar(t, jdks[name], "front", testAppJar("spring"),
					[]string{"BACKEND_URL=http://" + backAddr, "WEB_STACK=mvc"}, "-javaagent:"+agentJar())
				w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
				var routes []frontPath
				for _, c := range tc.clients {
					routes = append(routes, frontPath{"/" + c + "/", 1})
					numberedLoad(t, front.url+"/"+c+"/", 40, 8)
				}
				quiesce(rcv, 20*time.Second)
				checkClientParents(t, w, rcv, front, tc.backend, "http", "2", routes)
				checkModulesApplied(t, front, tc.modules...)
			})
		}
	}
}

// logLossCounters logs what weft's counters say became of missing spans
// between two metrics snapshots: where they were lost, if weft knows.
func logLossCounters(t *testing.T, what string, before, after map[string]uint64) {
	t.Helper()
	var grown []string
	for _, k := range []string{"events_lost", "events_lost_ringbuf", "events_lost_inflight_full", "payload_unreadable",
		"socket_table_full", "events_skipped_not_http", "events_skipped_unreadable_call", "conns_not_http",
		"parse_errors", "requests_timed_out", "requests_unanswered", "responses_unmatched", "conns_evicted",
		"h2_conns", "h2_conns_lost", "h2_streams_lost", "h2_conns_cut", "h2_conns_table_full",
		"tls_calls_without_socket", "tls_links_ambiguous", "spans_server", "spans_client", "kernel_events",
		"correlate_events"} {
		grown = append(grown, fmt.Sprintf("%s +%d", k, after[k]-before[k]))
	}
	t.Logf("counters %s: %s", what, strings.Join(grown, ", "))
}
