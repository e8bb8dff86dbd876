package e2e

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

func testAppJar(name string) string {
	return filepath.Join(repoRoot(), "test", "apps", "jvm", name, "target", name+".jar")
}

// jvmClients are the client routes of the test apps (test/apps/jvm): each
// request /<client>/N makes one backend call /work/N/<client>.
var jvmClients = []string{"cio", "ktor-okhttp", "okhttp-execute", "okhttp-enqueue", "jdk-send", "jdk-sendasync", "urlconnection"}

// checkClientParents sends 200 numbered requests at concurrency 32 to each
// client route of front (service name "front", backend "backend") and to
// its fan-out route (three calls at once): every backend call under its
// own request, none under another, none split.
func checkClientParents(t *testing.T, w *weft, rcv *otlptest.Receiver, front jvm, routes []frontPath) {
	t.Helper()
	const n, conc = 200, 32
	for _, ep := range routes {
		rcv.Reset()
		numberedLoad(t, front.url+ep.path, n, conc)
		spans := collectSpans(t, rcv, n*(1+2*ep.calls), 60*time.Second)
		r := checkParents(spans, "front", "backend")
		m, _ := w.Metrics()
		t.Logf("%s: %s; refused: ambiguous %d, unknown %d, ended %d", ep.path, r, m["parent_refused_ambiguous"],
			m["parent_refused_unknown_runtime"], m["parent_refused_ended"])
		if r.wrong != 0 || r.right != n*ep.calls {
			t.Errorf("%s: right %d, wrong %d, split %d of %d calls; spans by service and kind: %v",
				ep.path, r.right, r.wrong, r.split, n*ep.calls, countByKind(spans))
		}
	}
}

// The Ktor 3 test app calls its backend through every JVM client it has,
// on JDK 17 and JDK 25, with the agent loaded by -javaagent and attached
// at run time (`weft java attach`).
func TestJVMClientsKtor3(t *testing.T) {
	setup(t)
	buildJava(t)
	var routes []frontPath
	for _, c := range jvmClients {
		routes = append(routes, frontPath{"/" + c + "/", 1})
	}
	routes = append(routes, frontPath{"/fan/", 3})
	for _, name := range []string{"jdk17", "jdk25"} {
		for _, load := range []string{"javaagent", "attach"} {
			t.Run(name+"/"+load, func(t *testing.T) {
				rcv := otlptest.Start(t)
				var opts []string
				if load == "javaagent" {
					opts = []string{"-javaagent:" + agentJar()}
				}
				back := startJVMJar(t, jdks[name], "backend", serviceJar("backend"), nil, opts...)
				front := startJVMJar(t, jdks[name], "front", testAppJar("ktor3"), []string{"BACKEND_URL=" + back.url}, opts...)
				w := startWeft(t, rcv, "--pid="+strconv.Itoa(back.Pid())+","+strconv.Itoa(front.Pid()))
				if load == "attach" {
					for _, p := range []*proc{back.proc, front.proc} {
						out, err := exec.Command(bins.weft, "java", "attach", strconv.Itoa(p.Pid())).CombinedOutput()
						if err != nil {
							t.Fatalf("weft java attach %d: %v\n%s", p.Pid(), err, out)
						}
					}
				}
				// Warm-up: class loading, JIT, and every client's pooled
				// connections opened under weft.
				for _, r := range routes {
					numberedLoad(t, front.url+r.path, 40, 8)
				}
				quiesce(rcv, 20*time.Second)
				checkClientParents(t, w, rcv, front, routes)
				checkModulesApplied(t, front, "okhttp-4", "jdk-httpclient", "kotlinx-coroutines", "netty")
			})
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
