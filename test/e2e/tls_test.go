package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/test/testcert"
)

// nginxTLSConf serves what the listen options say (" ssl": HTTPS; " ssl
// http2": HTTP/2 too, by ALPN; " http2": h2c with prior knowledge) and
// proxies /req/N to the backend's /slow/N (which waits N % 10 ms) over a
// fresh plaintext connection per request, with the location's directives
// that follow, and the server's.
const nginxTLSConf = `daemon off;
master_process on;
worker_processes 2;
pid %[1]s/nginx.pid;
error_log stderr warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream backend { server %[2]s; }
	server {
		listen 127.0.0.1:%[3]d%[6]s reuseport;
		ssl_certificate %[4]s;
		ssl_certificate_key %[5]s;
		location /req/ { proxy_pass http://backend/slow/;%[7]s }%[8]s
	}
}
`

// startNginxTLS runs nginx with two workers serving HTTPS (or as
// listenOpts say, nginxTLSConf) in front of
// backend, and returns the master, the worker pids and the address.
func startNginxTLS(t *testing.T, backend, listenOpts, location, server string) (*proc, []int, string) {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		bin = "/usr/sbin/nginx"
	}
	dir := t.TempDir()
	cert, key, err := testcert.Files(dir)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	conf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(nginxTLSConf, dir, backend, port, cert, key, listenOpts, location, server)), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "-c", conf, "-e", "stderr")
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		kids := childPIDs(p.Pid())
		if listening(port) && len(kids) == 2 {
			return p, kids, fmt.Sprintf("127.0.0.1:%d", port)
		}
		if !p.Alive() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nginx did not come up with 2 workers:\n%s", p.Output())
	return nil, nil, ""
}

// curl over HTTPS, 16 transfers at a time on kept-alive connections, to
// nginx terminating TLS, proxying to a Python backend whose handlers
// wait. weft sees curl's and nginx's plaintext through OpenSSL's uprobes.
// Over HTTP/1.1 every request is one trace of four spans, each the child
// of the one before: weft links curl's client span to nginx's server span
// across the TLS connection, which carries no traceparent (tlslink.h).
// Over HTTP/2 (ALPN) the kernel decides each of curl's stream spans as
// its write begins (h2seed.h), and nginx takes it as the parent of its
// server span, under which its upstream call goes: one chain of four
// too. Over HTTP/1.1 nginx serves from
// workers a reload started after weft attached, which need TLS hooks of
// their own.
func TestTLSNginxChain(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		name, curlFlag, listen, proto string
		reload                        bool
	}{
		{"http1.1,reloaded", "--http1.1", " ssl", "1.1", true},
		{"http2", "--http2", " ssl http2", "2", false},
	} {
		t.Run(c.name, func(t *testing.T) { tlsNginxChain(t, c.curlFlag, c.listen, c.proto, c.reload) })
	}
}

func tlsNginxChain(t *testing.T, curlFlag, listenOpts, proto string, reload bool) {
	const n = 300
	rcv := otlptest.Start(t)
	backend, backAddr := startListener(t, exec.Command("python3", filepath.Join(repoRoot(), "test", "e2e", "testdata", "chain.py")))
	master, kids, addr := startNginxTLS(t, backAddr, listenOpts, "", "")

	cli := startCurl(t, "-sS", "--no-progress-meter", "-k", curlFlag, "-Z", "--parallel-max", "16",
		"-w", "%{http_code} %{http_version}\\n", "-K", curlURLs(t, "https://"+addr+"/req/", 1, n))

	pids := []string{strconv.Itoa(master.Pid()), strconv.Itoa(backend.Pid()), strconv.Itoa(cli.pid)}
	for _, k := range kids {
		pids = append(pids, strconv.Itoa(k))
	}
	w := startWeft(t, rcv, "--pid="+strings.Join(pids, ","))
	defer func() {
		if t.Failed() {
			t.Logf("weft:\n%s", w.Output())
		}
	}()
	if reload {
		kids = reloadNginx(t, master, kids)
	}
	waitWorkerHooks(t, w, kids, "nginx: upstream requests tied to their downstream request; TLS: OpenSSL in ")
	cli.run(t)
	if got := strings.Count(cli.stdout.Output(), "200 "+proto+"\n"); got != n {
		t.Fatalf("curl got %d answers 200, want %d:\n%s", got, n, cli.out.Output())
	}

	spans := waitSpans(t, rcv, 4*n, 60*time.Second, func(span) bool { return true })
	curlClient, nginxServer, nginxClient, pyServer := 0, 1, 2, 3
	roleOf := func(s span) int {
		pid64, _ := s.res["process.pid"].(int64)
		pid := int(pid64)
		switch {
		case pid == cli.pid && s.kind == tracepb.Span_SPAN_KIND_CLIENT:
			return curlClient
		case pid == backend.Pid() && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			return pyServer
		case pid != backend.Pid() && pid != cli.pid && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			return nginxServer
		case pid != backend.Pid() && pid != cli.pid && s.kind == tracepb.Span_SPAN_KIND_CLIENT:
			return nginxClient
		}
		return -1
	}
	chains := chainsByRequest(t, spans, 4, roleOf)
	wantScheme := [4]string{"https", "https", "http", "http"}
	right := 0
	for i := 1; i <= n; i++ {
		c := chains[strconv.Itoa(i)]
		if c == nil {
			t.Errorf("request %d: no spans", i)
			continue
		}
		ok := true
		for r, s := range c {
			if s.id == "" {
				t.Errorf("request %d: span %d of the chain missing", i, r)
				ok = false
				continue
			}
			wantProto := "1.0" // nginx to its upstream
			if r < 2 {
				wantProto = proto
			}
			if s.attrs["url.scheme"] != wantScheme[r] || attrInt(s, "http.response.status_code") != 200 ||
				s.attrs["network.protocol.version"] != wantProto {
				t.Errorf("request %d: %s", i, s)
				ok = false
			}
			root := r == 0
			switch {
			case root && s.parent != "":
				t.Errorf("request %d: %s has a parent", i, s)
				ok = false
			case !root && (s.parent != c[r-1].id || s.trace != c[r-1].trace):
				t.Errorf("request %d: %s is not the child of %s", i, s, c[r-1])
				ok = false
			}
		}
		if ok {
			right++
		}
	}
	m, _ := w.Metrics()
	if m["tls_links_ambiguous"] != 0 || m["tls_calls_without_socket"] != 0 {
		t.Errorf("TLS counters: ambiguous %d, without socket %d", m["tls_links_ambiguous"], m["tls_calls_without_socket"])
	}
	// Over HTTP/2 the kernel decides curl's stream spans as its writes
	// begin, and nginx takes them for its upstream calls (h2seed.h).
	want := 0
	if proto == "2" {
		want = n
	}
	if m["h2_opened"] != uint64(want) || m["h2_opened_unmatched"] != 0 || m["h2_served_linked"] != uint64(want) {
		t.Errorf("h2_opened %d, h2_opened_unmatched %d, h2_served_linked %d; want %d, 0, %d",
			m["h2_opened"], m["h2_opened_unmatched"], m["h2_served_linked"], want, want)
	}
	if len(spans) != 4*n || right != n {
		t.Fatalf("%d spans, %d of %d chains right", len(spans), right, n)
	}
}

// curlURLs writes a curl config that fetches prefix<i> for i in
// [from, to], discarding the bodies, and returns its path.
func curlURLs(t *testing.T, prefix string, from, to int) string {
	t.Helper()
	var cfg strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&cfg, "url = \"%s%d\"\noutput = \"/dev/null\"\n", prefix, i)
	}
	path := filepath.Join(t.TempDir(), "curl.cfg")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// curl, traced, calls Go's HTTPS server over HTTP/2; the server's handler
// GETs /work/<i> from websrv. curl sends no traceparent, and HPACK leaves
// no room to inject one: the kernel decides each stream's span as curl's
// write begins (h2seed.h), and the Go server's handler serves a span
// under it (h2serve.h), so its GET is in curl's trace. 300 requests, 16
// at a time (handlers that wait): every request one chain of four spans,
// curl's the root, each the child of the one before; 1200 spans.
func TestTLSCurlGoH2Handler(t *testing.T) {
	setup(t)
	const n = 300
	rcv := otlptest.Start(t)
	back, backAddr := startServer(t)
	mid, midAddr := startListener(t, exec.Command(bins.h2app, "-mode=https-server", "-backend="+backAddr))
	cli := startCurl(t, "-sS", "--no-progress-meter", "-k", "--http2", "-Z", "--parallel-max", "16",
		"-w", "%{http_version} %{http_code}\\n", "-K", curlURLs(t, "https://"+midAddr+"/req/", 0, n-1))
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d,%d", mid.Pid(), back.Pid(), cli.pid))
	cli.run(t)
	if got := strings.Count("\n"+cli.stdout.Output(), "\n2 "); got != n {
		t.Fatalf("curl made %d HTTP/2 transfers, want %d:\n%s", got, n, cli.out.Output())
	}
	spans := waitSpans(t, rcv, 4*n, 60*time.Second, func(span) bool { return true })
	chains := chainsByRequest(t, spans, 4, func(s span) int {
		pid, _ := s.res["process.pid"].(int64)
		server := s.kind == tracepb.Span_SPAN_KIND_SERVER
		switch {
		case int(pid) == cli.pid && !server:
			return 0
		case int(pid) == mid.Pid():
			return map[bool]int{true: 1, false: 2}[server]
		case int(pid) == back.Pid() && server:
			return 3
		}
		return -1
	})
	right := 0
	for i := range n {
		c := chains[strconv.Itoa(i)]
		ok := c != nil && c[0].id != "" && c[0].parent == ""
		for r := 1; ok && r < 4; r++ {
			ok = c[r].id != "" && c[r].parent == c[r-1].id && c[r].trace == c[0].trace
		}
		if !ok {
			t.Errorf("request %d: not one chain: %v", i, c)
			continue
		}
		right++
	}
	m, _ := w.Metrics()
	if m["h2_opened"] != n || m["h2_opened_unmatched"] != 0 || m["h2_served_linked"] != n || m["h2_served_unmatched"] != 0 {
		t.Errorf("h2_opened %d, h2_opened_unmatched %d, h2_served_linked %d, h2_served_unmatched %d; want %d, 0, %d, 0",
			m["h2_opened"], m["h2_opened_unmatched"], m["h2_served_linked"], m["h2_served_unmatched"], n, n)
	}
	if len(spans) != 4*n || right != n {
		t.Fatalf("%d spans, %d of %d chains right", len(spans), right, n)
	}
}

// chainsByRequest groups spans by the request number in their path, each
// in the place of roles that roleOf gives it; a span with no place or no
// number, or a second one in a place, fails the test.
func chainsByRequest(t *testing.T, spans []span, roles int, roleOf func(span) int) map[string][]span {
	t.Helper()
	chains := map[string][]span{}
	for _, s := range spans {
		r := roleOf(s)
		num := requestOf(fmt.Sprint(s.attrs["url.path"]))
		if r < 0 || r >= roles || num == "" {
			t.Fatalf("unexpected span %s", s)
		}
		c := chains[num]
		if c == nil {
			c = make([]span, roles)
			chains[num] = c
		}
		if c[r].id != "" {
			t.Fatalf("request %s: two spans in one role:\n%s\n%s", num, c[r], s)
		}
		c[r] = s
	}
	return chains
}

// A Go HTTPS client calling a Go HTTPS server, both stripped (h2app):
// crypto/tls's plaintext through uprobes on its copy and record calls,
// keyed by goroutine. 100 requests, 16 at a time, every fifth with a traceparent
// of its own, handlers that wait, bodies checked byte for byte by the
// client. Each server span is the child of its client span (handed over
// across TLS: tlslink.h for HTTP/1.1, h2link.go for HTTP/2's streams) or,
// with a traceparent, both are children of it.
func TestTLSGo(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		name, proto string
		args        []string
	}{{"http1.1", "1.1", []string{"-http1"}}, {"http2", "2", nil}} {
		t.Run(c.name, func(t *testing.T) {
			const n = 100
			rcv := otlptest.Start(t)
			srv, addr := startListener(t, exec.Command(bins.h2app, "-mode=https-server"))
			cli := startGoClient(t, append([]string{"-mode=https-client", "-addr=" + addr, fmt.Sprintf("-n=%d", n)}, c.args...)...)
			// Responses over 2 KiB are chunked on HTTP/1.1: with the whole
			// of each write captured, body sizes are exact, not estimated.
			w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", srv.Pid(), cli.pid), "--capture-bytes=4096")
			defer func() {
				if t.Failed() {
					t.Logf("weft:\n%s", w.Output())
				}
			}()
			for _, pid := range []int{srv.Pid(), cli.pid} {
				if !strings.Contains(w.Output(), fmt.Sprintf("pid=%d mode=goroutine", pid)) ||
					!strings.Contains(w.Output(), "h2app (crypto/tls)") || !strings.Contains(w.Output(), "stripped binary") {
					t.Fatalf("pid %d: no crypto/tls hooks on the stripped binary:\n%s", pid, w.Output())
				}
			}
			cli.run(t)
			got := waitSpans(t, rcv, 2*n, 30*time.Second, func(s span) bool {
				return s.res["process.pid"] == int64(srv.Pid()) || s.res["process.pid"] == int64(cli.pid)
			})
			if len(got) != 2*n {
				t.Fatalf("%d requests gave %d spans:\n%s", n, len(got), dump(got))
			}
			byKind := map[tracepb.Span_SpanKind]map[int]span{tracepb.Span_SPAN_KIND_SERVER: {}, tracepb.Span_SPAN_KIND_CLIENT: {}}
			for _, s := range got {
				i, err := strconv.Atoi(strings.TrimPrefix(fmt.Sprint(s.attrs["url.path"]), "/req/"))
				if err != nil || i < 0 || i >= n || byKind[s.kind] == nil {
					t.Fatalf("span %s", s)
				}
				if _, dup := byKind[s.kind][i]; dup {
					t.Fatalf("two %v spans of request %d:\n%s", s.kind, i, dump(got))
				}
				byKind[s.kind][i] = s
				if s.attrs["url.scheme"] != "https" || s.attrs["network.protocol.version"] != c.proto ||
					attrInt(s, "http.response.status_code") != h2Status(i) || attrInt(s, "http.response.body.size") != h2BodyLen(i) {
					t.Errorf("request %d: %s", i, s)
				}
			}
			for i := range n {
				srvSpan, cliSpan := byKind[tracepb.Span_SPAN_KIND_SERVER][i], byKind[tracepb.Span_SPAN_KIND_CLIENT][i]
				if i%5 == 0 { // the client sent a traceparent of its own
					trace, parent := fmt.Sprintf("%032x", 0xabc000+i), fmt.Sprintf("%016x", 0xdef000+i)
					for _, s := range []span{srvSpan, cliSpan} {
						if s.trace != trace || s.parent != parent {
							t.Errorf("request %d: %s not under the client's traceparent", i, s)
						}
					}
					continue
				}
				if cliSpan.parent != "" {
					t.Errorf("request %d: client span %s has a parent", i, cliSpan)
				}
				if srvSpan.parent != cliSpan.id || srvSpan.trace != cliSpan.trace {
					t.Errorf("request %d: server span %s is not the child of %s", i, srvSpan, cliSpan)
				}
			}
		})
	}
}

// A Go HTTPS/1.1 front whose handlers call a plaintext backend over a
// socket of their own goroutine: /req/'s call is made by the goroutine
// that has just read its request through crypto/tls, whose Read ends
// without a probe (gotls.h). The socket call on another socket must be
// taken for what it is, plaintext, not for the TLS call's ciphertext:
// 300 requests at concurrency 32 per endpoint, every call under its own
// request, every backend span under its call.
func TestTLSGoPlainCall(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	backend, backAddr := startServer(t, "-mode=nethttp")
	cmd := exec.Command(bins.h2app, "-mode=raw-front", "-addr="+backAddr, "-tls=true")
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=front")
	front, frontAddr := startListener(t, cmd)
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
	if !strings.Contains(w.Output(), "h2app (crypto/tls)") {
		t.Fatalf("no crypto/tls hooks on the front:\n%s", w.Output())
	}
	const n = 300
	for _, ep := range []frontPath{{"/req/", 1}, {"/fan/", 2}} {
		rcv.Reset()
		numberedLoad(t, "https://"+frontAddr+ep.path, n, 32)
		spans := collectSpans(t, rcv, n*(1+2*ep.calls), 60*time.Second)
		r := checkParents(spans, "front", "websrv")
		if len(spans) != n*(1+2*ep.calls) || r.wrong != 0 || r.right != n*ep.calls {
			t.Errorf("%s: %d spans (want %d); %s", ep.path, len(spans), n*(1+2*ep.calls), r)
		}
	}
}

// Node.js's https through OpenSSL, which Node.js drives through memory
// BIOs, moving the ciphertext itself (tlsbio.h): the machine's Node.js
// (OpenSSL linked into node) and Debian's (the system's libssl.so.3). A
// front serving HTTPS, its handlers waiting, then calling an HTTPS
// backend through a keep-alive agent of 8 sockets (/req/, /fan/: two
// calls at once) and with fetch; weft's companion announces each call's
// parent. 300 requests at concurrency 32 per endpoint, every call under
// its own request; calls made after their request was answered start
// their own trace.
func TestTLSNode(t *testing.T) {
	setup(t)
	app, companion := nodeAsync(t)
	cert, key, err := testcert.Files(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, debian := range []bool{false, true} {
		t.Run(map[bool]string{false: "node", true: "debian-node"}[debian], func(t *testing.T) {
			node, env := "node", []string(nil)
			if debian {
				node, env = debianNode(t)
			}
			checkHTTPSFront(t, func(backAddr string) *exec.Cmd {
				cmd := exec.Command(node, app, backAddr, "https", cert, key)
				cmd.Env = append(append(os.Environ(), env...), "OTEL_SERVICE_NAME=front", "NODE_OPTIONS=--require "+companion,
					"NODE_TLS_REJECT_UNAUTHORIZED=0") // the backend's certificate is self-signed
				return cmd
			}, `mode="node companion"`, []frontPath{{"/req/", 1}, {"/fan/", 2}, {"/fetch/", 1}})
		})
	}
}

// checkHTTPSFront runs the front service cmdFor makes for websrv's HTTPS
// address, requires weft to follow it as follows says and with OpenSSL
// hooks, and checks its endpoints as checkNumberedEndpoints and
// checkLateCalls do: every call under its own request. No TLS call may
// go without its socket.
func checkHTTPSFront(t *testing.T, cmdFor func(backAddr string) *exec.Cmd, follows string, eps []frontPath) {
	t.Helper()
	rcv := otlptest.Start(t)
	backend, backAddr := startServer(t, "-mode=nethttp", "-tls")
	front, frontAddr := startListener(t, cmdFor(backAddr))
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
	if !regexp.MustCompile(fmt.Sprintf(`pid=%d .*%s.*OpenSSL in `, front.Pid(), regexp.QuoteMeta(follows))).MatchString(w.Output()) {
		t.Fatalf("the front was not followed (%s) with OpenSSL hooks:\n%s", follows, w.Output())
	}
	checkNumberedEndpoints(t, w, rcv, "https://"+frontAddr, eps)
	checkLateCalls(t, w, rcv, "https://"+frontAddr)
	checkTLSTies(t, w, "memory-BIO connections")
}

// checkTLSTies logs how many TLS connections (what) weft tied to their
// sockets by their records, and requires every TLS call to have found
// its socket.
func checkTLSTies(t *testing.T, w *weft, what string) {
	t.Helper()
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s tied %d", what, m["tls_bio_sockets_learned"])
	if m["tls_calls_without_socket"] != 0 {
		t.Errorf("%d TLS calls without a socket", m["tls_calls_without_socket"])
	}
}

// Python's asyncio over TLS (ssl.SSLObject on memory BIOs, tlsbio.h): an
// HTTPS front (aiohttp's server; FastAPI on uvicorn) calling an HTTPS
// backend (aiohttp's client; httpx), on the machine's Python and Debian's,
// both on the system's libssl; the companion announces each call's
// parent. As TestTLSNode.
func TestTLSPythonAsync(t *testing.T) {
	setup(t)
	app, venv, companion := pyAsync(t)
	cert, key, err := testcert.Files(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, python, server, client string
	}{
		{"aiohttp", venv, "aiohttp", "aiohttp"},
		{"debian-fastapi-httpx", "/usr/bin/python3", "fastapi", "httpx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkHTTPSFront(t, func(backAddr string) *exec.Cmd {
				cmd := exec.Command(tc.python, app, backAddr, tc.server, tc.client, cert, key)
				cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=front", "PYTHONPATH="+companion)
				return cmd
			}, "asyncio calls as weft's companion announces them", []frontPath{{"/req/", 1}, {"/fan/", 2}})
		})
	}
}

// A crypto/tls Write that must grow its stack passes its stack check
// twice (runtime.morestack starts the call over); its plaintext must be
// reported once (gotls.h: at its call of writeRecordLocked, past the
// check; the entry probes skip the pass that jumps). 400 requests on one
// connection, each written from a new goroutine at another stack depth,
// so that some Writes grow their stack at entry: each request gives
// exactly one client span and one server span, with its own path, and
// nothing fails to parse.
func TestTLSGoStackGrowth(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startListener(t, exec.Command(bins.h2app, "-mode=https-server"))
	const n = 400
	cli := startGoClient(t, "-mode=tls-deep-client", "-addr="+addr, "-n="+strconv.Itoa(n))
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", srv.Pid(), cli.pid))
	cli.run(t)
	got := waitSpans(t, rcv, 2*n, 60*time.Second, func(s span) bool { return s.service == "h2app" })
	seen := map[tracepb.Span_SpanKind]map[int]bool{tracepb.Span_SPAN_KIND_SERVER: {}, tracepb.Span_SPAN_KIND_CLIENT: {}}
	for _, s := range got {
		i, err := strconv.Atoi(strings.TrimPrefix(fmt.Sprint(s.attrs["url.path"]), "/work/"))
		if err != nil || i < 0 || i >= n || seen[s.kind] == nil || seen[s.kind][i] {
			t.Errorf("unexpected or repeated span %s", s)
			continue
		}
		seen[s.kind][i] = true
		if attrInt(s, "http.response.status_code") != 200 || attrInt(s, "http.response.body.size") != 3 {
			t.Errorf("request %d: %s", i, s)
		}
	}
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*n || len(seen[tracepb.Span_SPAN_KIND_CLIENT]) != n || m["parse_errors"] != 0 || m["requests_unanswered"] != 0 {
		t.Errorf("%d spans (want %d), %d requests with a client span; parse errors %d, unanswered %d",
			len(got), 2*n, len(seen[tracepb.Span_SPAN_KIND_CLIENT]), m["parse_errors"], m["requests_unanswered"])
	}
}
