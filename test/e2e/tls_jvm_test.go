package e2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/test/testcert"
)

// The JVM's TLS, seen in clear through weft's Java agent (jvmtls.h): the
// Spring MVC test app, on JDK 17 and JDK 25, calls websrv over HTTPS with
// every client it has: OkHttp, HttpsURLConnection and Apache's classic
// client on SSLSocket; the JDK's HttpClient, Apache's async client and
// WebClient (Netty) on SSLEngine, the JDK's and netty-tcnative's
// (BoringSSL through JNI, module netty-tcnative). Every call is a client span under its
// own request, the first request of each connection the JDK's HttpClient
// opens under the load included (its bytes wait for the handshake and are
// wrapped by the thread that ends it). Again with websrv offering HTTP/2:
// OkHttp's, Apache's async client's, the JDK HttpClient's and WebClient's
// (on either engine, built for HTTP/2; Reactor Netty opens several connections per event
// loop, whose streams share ids) calls go as streams of shared
// connections, whose HEADERS one thread may write with other requests'
// (H2Streams): every stream under its own request too.
func TestTLSJVM(t *testing.T) {
	h2Clients := []string{"okhttp-execute", "okhttp-enqueue", "jdk2-send", "jdk2-sendasync", "apache5-async", "webclient2",
		"webclient2-openssl"}
	h1Clients := append(springClients[:8:8], "webclient-openssl")
	setup(t)
	buildJava(t)
	dir := t.TempDir()
	cert, key, err := testcert.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, jdk string
		h2        bool     // websrv offers HTTP/2
		clients   []string // the app's client routes called
	}{
		{"jdk17", "jdk17", false, h1Clients},
		{"jdk25", "jdk25", false, h1Clients},
		{"jdk17-http2", "jdk17", true, h2Clients},
		{"jdk25-http2", "jdk25", true, h2Clients},
	} {
		name := tc.jdk
		t.Run(tc.name, func(t *testing.T) {
			// The JVM trusts websrv's certificate through its default
			// trust store, which every client uses.
			store := filepath.Join(t.TempDir(), "trust.p12")
			java, err := exec.LookPath(jdks[name])
			if err == nil {
				java, err = filepath.EvalSymlinks(java)
			}
			if err != nil {
				t.Fatal(err)
			}
			keytool := filepath.Join(filepath.Dir(java), "keytool")
			if out, err := exec.Command(keytool, "-importcert", "-noprompt", "-alias", "websrv", "-file", cert,
				"-keystore", store, "-storetype", "PKCS12", "-storepass", "changeit").CombinedOutput(); err != nil {
				t.Fatalf("keytool: %v\n%s", err, out)
			}
			rcv := otlptest.Start(t)
			args := []string{"-mode=nethttp", "-tls", "-cert=" + cert, "-key=" + key}
			if tc.h2 {
				args = append(args, "-h2")
			}
			backend, backAddr := startServer(t, args...)
			front := startJVMJar(t, jdks[name], "front", testAppJar("spring"),
				[]string{"BACKEND_URL=https://" + backAddr, "WEB_STACK=mvc"},
				"-javaagent:"+agentJar(), "-Djavax.net.ssl.trustStore="+store, "-Djavax.net.ssl.trustStorePassword=changeit")
			w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
			if !strings.Contains(w.Output(), "the Java agent's TLS hooks") {
				t.Fatalf("the agent's TLS hooks are not attached:\n%s", w.Output())
			}
			app := jvmApp{clients: tc.clients}
			routes := app.routes()
			if tc.h2 {
				routes = routes[:len(routes)-1] // /fan/'s JDK HttpClient calls go on HTTP/1.1
			}
			for _, r := range routes {
				numberedLoad(t, front.url+r.path, 40, 8)
			}
			quiesce(rcv, 20*time.Second)
			proto := "1.1"
			if tc.h2 {
				proto = "2"
			}
			checkClientParents(t, w, rcv, front, "websrv", "https", proto, routes)
			checkModulesApplied(t, front, "jdk-tls", "netty-tcnative")
			if tc.h2 {
				checkModulesApplied(t, front, "netty-http2-client", "reactor-netty-http2-client")
				// OkHttp opens several connections under the first burst
				// and closes all but one. Their last frames (17-byte
				// GOAWAYs, a SETTINGS ack) come when their descriptor no
				// longer names a TCP socket (a bpf_printk trace: fd_sock
				// gives 0; the JDK pre-closes a descriptor that a reader
				// is blocked on): dropped and counted, about 14 here, as
				// many as the race makes, so not held to 0. They carry no
				// request.
				m, _ := w.Metrics()
				t.Logf("TLS calls without a socket: %d", m["tls_calls_without_socket"])
				return
			}
			checkTLSTies(t, w, "engines")
		})
	}
}

// The JVM's TLS servers, seen in clear through weft's Java agent: the
// Spring app serving HTTPS with Spring MVC on Tomcat (the JDK's SSLEngine,
// JDK 17) and with WebFlux on Reactor Netty (netty-tcnative's engine,
// which Netty picks when it is there, JDK 25). 200 numbered requests at
// concurrency 32 per route, each with a traceparent of its own (trace
// 0xabc000+i, span 0xdef000+i): every server span of request i in that
// trace under that span, and the backend call it makes under it (and
// websrv's span under the call). The JVM starts, and its threads that
// serve the readiness check register, before weft does; with the agent's
// re-registration off, weft follows those threads only by reading the
// agent's table of registrations (pkg/tracer/slottable.go).
func TestTLSJVMServers(t *testing.T) {
	setup(t)
	buildJava(t)
	cert, key, err := testcert.Files(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ stack, jdk, engineModule, route string }{
		{"mvc", "jdk17", "jdk-tls", "/okhttp-execute/"},
		{"webflux", "jdk25", "netty-tcnative", "/webclient/"},
	} {
		t.Run(tc.stack+"/"+tc.jdk, func(t *testing.T) {
			const n, conc = 200, 32
			rcv := otlptest.Start(t)
			backend, backAddr := startServer(t)
			front := startJVMJar(t, jdks[tc.jdk], "front", testAppJar("spring"),
				[]string{"BACKEND_URL=http://" + backAddr, "WEB_STACK=" + tc.stack, "SERVER_SSL_ENABLED=true",
					"SERVER_SSL_CERTIFICATE=file:" + cert, "SERVER_SSL_CERTIFICATEPRIVATEKEY=file:" + key},
				"-javaagent:"+agentJar()+"=refresh=0")
			w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
			loadRequests(t, func(i int64) *http.Request {
				req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s%s%d", front.url, tc.route, i), nil)
				if err != nil {
					panic(err) // the test's own URLs
				}
				req.Header.Set("traceparent", fmt.Sprintf("00-%032x-%016x-01", 0xabc000+i, 0xdef000+i))
				return req
			}, n, conc)
			spans := collectSpans(t, rcv, 3*n, 60*time.Second)
			r := checkParents(spans, "front", "websrv")
			joined := 0
			for _, s := range spans {
				if s.service != "front" || s.kind != tracepb.Span_SPAN_KIND_SERVER {
					continue
				}
				path, _ := s.attrs["url.path"].(string)
				i, err := strconv.ParseInt(requestOf(path), 10, 64)
				if err == nil && s.attrs["url.scheme"] == "https" && s.trace == fmt.Sprintf("%032x", 0xabc000+i) &&
					s.parent == fmt.Sprintf("%016x", 0xdef000+i) {
					joined++
				}
			}
			t.Logf("%s: %s; server spans in their traceparent's trace %d", tc.route, r, joined)
			if r.wrong != 0 || r.split != 0 || r.right != n || joined != n || len(spans) != 3*n {
				t.Errorf("%s: right %d, wrong %d, split %d of %d calls; %d of %d server spans under their traceparent; %d spans (want %d): %v",
					tc.route, r.right, r.wrong, r.split, n, joined, n, len(spans), 3*n, countByKind(spans))
			}
			if m, err := w.Metrics(); err != nil || m["spans_client_root"] != 0 {
				t.Errorf("client spans that started a trace: %d (%v)", m["spans_client_root"], err)
			}
			checkModulesApplied(t, front, tc.engineModule)
		})
	}
}
