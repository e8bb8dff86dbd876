package e2e

import (
	"bufio"
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
)

// goClient is a client that waits for a go-ahead, so that weft can be
// started on its pid before it connects: h2app's clients, or a shell that
// execs curl (the pid stays the same).
type goClient struct {
	cmd    *exec.Cmd
	pid    int
	out    *proc // stdout and stderr, for failure messages
	stdout *proc
	stdin  interface{ Write([]byte) (int, error) }
	done   chan struct{}
}

func startGoClient(t *testing.T, args ...string) *goClient {
	t.Helper()
	return startWaiting(t, exec.Command(bins.h2app, args...))
}

// startCurl runs curl with args once let go.
func startCurl(t *testing.T, args ...string) *goClient {
	t.Helper()
	return startWaiting(t, exec.Command("sh", append([]string{"-c", `echo $$; read x; exec curl "$@"`, "sh"}, args...)...))
}

func startWaiting(t *testing.T, cmd *exec.Cmd) *goClient {
	t.Helper()
	args := cmd.Args
	c := &goClient{cmd: cmd, out: &proc{}, stdout: &proc{}, done: make(chan struct{})}
	orphanless(cmd)
	stdin, err := c.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stderr = c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); <-c.done })
	r := bufio.NewReader(stdout)
	line, err := r.ReadString('\n')
	if c.pid, _ = strconv.Atoi(strings.TrimSpace(line)); err != nil || c.pid == 0 {
		t.Fatalf("%v: no pid: %q %v %s", args, line, err, c.out.Output())
	}
	go func() {
		for {
			l, err := r.ReadString('\n')
			c.out.Write([]byte(l))
			c.stdout.Write([]byte(l))
			if err != nil {
				break
			}
		}
		c.cmd.Wait()
		close(c.done)
	}()
	c.stdin = stdin
	return c
}

// run lets the client go and waits for it to succeed.
func (c *goClient) run(t *testing.T) {
	t.Helper()
	c.stdin.Write([]byte("go\n"))
	c.wait(t)
}

// wait waits for a client let go to succeed.
func (c *goClient) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("client did not finish: %s", c.out.Output())
	}
	if !c.cmd.ProcessState.Success() {
		t.Fatalf("client failed: %s", c.out.Output())
	}
}

// What h2app's h2c server answers to request i (test/e2e/testdata/h2app).
func h2Status(i int) int64 {
	if i%10 == 7 {
		return 404
	}
	return 200
}

func h2BodyLen(i int) int64 { return int64(100 + 37*i) }

func h2Wait(i int) time.Duration { return time.Duration((i*7)%20) * time.Millisecond }

// HTTP/2 with prior knowledge: 100 streams on one connection, most of
// them interleaved, from Go's client to Go's server: 100 server spans and
// 100 client spans, each with its own path, status, body size and timing,
// and the trace of the traceparent a request carried.
// The client checks every response byte for byte.
func TestHTTP2Streams(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startListener(t, exec.Command(bins.h2app, "-mode=h2c-server"))
	const n = 100
	cli := startGoClient(t, "-mode=h2c-client", "-addr="+addr, "-n="+strconv.Itoa(n))
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", srv.Pid(), cli.pid))
	cli.run(t)
	if !strings.Contains(cli.stdout.Output(), "ok") {
		t.Fatalf("client: %s", cli.out.Output())
	}

	got := waitSpans(t, rcv, 2*n, 30*time.Second, func(s span) bool { return s.service == "h2app" })
	if len(got) != 2*n {
		t.Fatalf("%d requests gave %d spans:\n%s", n, len(got), dump(got))
	}
	servers, clients := map[int]span{}, map[int]span{}
	clientPorts := map[any]bool{}
	for _, s := range got {
		i, err := strconv.Atoi(strings.TrimPrefix(fmt.Sprint(s.attrs["url.path"]), "/req/"))
		if err != nil || i < 0 || i >= n {
			t.Fatalf("span with an unknown path: %s", s)
		}
		byKind, pid := servers, srv.Pid()
		if s.kind == tracepb.Span_SPAN_KIND_CLIENT {
			byKind, pid = clients, cli.pid
		}
		if _, dup := byKind[i]; dup {
			t.Fatalf("two %v spans of request %d:\n%s", s.kind, i, dump(got))
		}
		byKind[i] = s
		if s.res["process.pid"] != int64(pid) {
			t.Errorf("%s: resource pid %v, want %d", s, s.res["process.pid"], pid)
		}
		if s.name != "GET /req/{id}" || s.attrs["http.request.method"] != "GET" || s.attrs["network.protocol.version"] != "2" ||
			attrInt(s, "http.response.status_code") != h2Status(i) || attrInt(s, "http.response.body.size") != h2BodyLen(i) {
			t.Errorf("request %d: %s", i, s)
		}
		// Every fifth request carries a traceparent (h2app): both spans
		// join its trace, under the span it names. The others: the
		// client's span is a root (checked below, with the server's).
		if wantTrace, wantParent := fmt.Sprintf("%032x", 0xabc000+i), fmt.Sprintf("%016x", 0xdef000+i); i%5 == 0 &&
			(s.trace != wantTrace || s.parent != wantParent) {
			t.Errorf("request %d: trace %s parent %s, want the traceparent's %s %s: %s", i, s.trace, s.parent, wantTrace, wantParent, s)
		}
		if s.dur < h2Wait(i) {
			t.Errorf("request %d lasted %v, its handler waits %v: %s", i, s.dur, h2Wait(i), s)
		}
		wantErr := h2Status(i) == 404 && s.kind == tracepb.Span_SPAN_KIND_CLIENT // 4xx: a client's error only
		if s.err != wantErr {
			t.Errorf("request %d: error status %v, want %v: %s", i, s.err, wantErr, s)
		}
		switch s.kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			clientPorts[s.attrs["client.port"]] = true
		case tracepb.Span_SPAN_KIND_CLIENT:
			if s.attrs["url.full"] != fmt.Sprintf("http://%s/req/%d", addr, i) {
				t.Errorf("request %d: %s", i, s)
			}
		}
	}
	if len(servers) != n || len(clients) != n || len(clientPorts) != 1 {
		t.Fatalf("%d server and %d client spans (want %d each) over %d connections (want 1)", len(servers), len(clients), n, len(clientPorts))
	}
	// Without a traceparent, the server's span of a stream is the child of
	// the client's, both ends being traced on this host (h2link.go).
	for i := range n {
		if srv, cli := servers[i], clients[i]; i%5 != 0 && (cli.parent != "" || srv.parent != cli.id || srv.trace != cli.trace) {
			t.Errorf("request %d: want the client's span a root and the server's its child: %s / %s", i, srv, cli)
		}
	}
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m["h2_conns"] != 2 || m["h2_conns_lost"] != 0 || m["h2_streams_lost"] != 0 || m["h2_conns_cut"] != 0 {
		t.Errorf("h2 counters: conns %d (want 2: both ends), lost %d, streams lost %d, cut %d",
			m["h2_conns"], m["h2_conns_lost"], m["h2_streams_lost"], m["h2_conns_cut"])
	}
}

// gRPC over h2c between grpc-go's client and server, on one connection:
// unary calls answered OK and NOT_FOUND, server-streaming calls: one span
// per call on each side, with the RPC attributes and the gRPC status.
func TestGRPCCalls(t *testing.T) {
	setup(t)
	testGRPCClient(t, "", func(addr string, n int, _ string) *goClient {
		return startGoClient(t, "-mode=grpc-client", "-addr="+addr, "-n="+strconv.Itoa(n))
	})
}

// The same calls over TLS: both processes' crypto/tls in clear (gotls.h),
// HTTP/2 on top.
func TestGRPCCallsTLS(t *testing.T) {
	setup(t)
	testGRPCClient(t, "h2app (crypto/tls)", func(addr string, n int, _ string) *goClient {
		return startGoClient(t, "-mode=grpc-client", "-tls", "-addr="+addr, "-n="+strconv.Itoa(n))
	})
}

// The same calls from Python's grpcio, whose HTTP/2 is gRPC's C core (it
// writes with sendmsg from many iovecs). Not in the QEMU guests, which
// have no Python.
func TestGRPCCallsPython(t *testing.T) {
	setup(t)
	testGRPCClient(t, "", func(addr string, n int, _ string) *goClient {
		return startWaiting(t, exec.Command("/usr/bin/python3", grpcClientPy(), addr, strconv.Itoa(n)))
	})
}

// And over TLS: grpcio's C core runs OpenSSL (Debian's libssl) through
// memory BIOs and moves the ciphertext itself (tlsbio.h).
func TestGRPCCallsPythonTLS(t *testing.T) {
	setup(t)
	testGRPCClient(t, "OpenSSL in ", func(addr string, n int, ca string) *goClient {
		return startWaiting(t, exec.Command("/usr/bin/python3", grpcClientPy(), addr, strconv.Itoa(n), ca))
	})
}

func grpcClientPy() string { return filepath.Join(repoRoot(), "test/e2e/testdata/grpc_client.py") }

// testGRPCClient runs the calls of the client start makes against h2app's
// gRPC server: over TLS when clientTLS names the client's TLS hooks as
// weft logs them (start is given the server's certificate to trust).
func testGRPCClient(t *testing.T, clientTLS string, start func(addr string, n int, ca string) *goClient) {
	t.Helper()
	const n = 30
	rcv := otlptest.Start(t)
	args := []string{"-mode=grpc-server"}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if clientTLS != "" {
		args = append(args, "-tls", "-cert-out="+ca)
	}
	srv, addr := startListener(t, exec.Command(bins.h2app, args...))
	cli := start(addr, n, ca)
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", srv.Pid(), cli.pid))
	if clientTLS != "" {
		for pid, hooks := range map[int]string{srv.Pid(): "h2app (crypto/tls)", cli.pid: clientTLS} {
			if !regexp.MustCompile(fmt.Sprintf(`pid=%d .*%s`, pid, regexp.QuoteMeta(hooks))).MatchString(w.Output()) {
				t.Fatalf("pid %d: no %q hooks:\n%s", pid, hooks, w.Output())
			}
		}
	}
	cli.run(t)
	if !strings.Contains(cli.stdout.Output(), "ok") {
		t.Fatalf("client: %s", cli.out.Output())
	}
	checkGRPCSpans(t, rcv, n, srv.Pid(), cli.pid)
	if m, err := w.Metrics(); err != nil || m["tls_calls_without_socket"] != 0 {
		t.Errorf("TLS calls without a socket: %d (%v)", m["tls_calls_without_socket"], err)
	}
}

func checkGRPCSpans(t *testing.T, rcv *otlptest.Receiver, n, srvPid, cliPid int) {
	t.Helper()
	const perClient = 3 // Get OK, Get NOT_FOUND, List
	got := waitSpans(t, rcv, 2*perClient*n, 30*time.Second, func(s span) bool {
		return s.res["process.pid"] == int64(srvPid) || s.res["process.pid"] == int64(cliPid)
	})
	if len(got) != 2*perClient*n {
		t.Fatalf("%d calls gave %d spans:\n%s", perClient*n, len(got), dump(got))
	}
	type key struct {
		kind   tracepb.Span_SpanKind
		method string
		code   int64
	}
	count := map[key]int{}
	for _, s := range got {
		wantPid := int64(srvPid)
		if s.kind == tracepb.Span_SPAN_KIND_CLIENT {
			wantPid = int64(cliPid)
		}
		if s.attrs["rpc.system"] != "grpc" || s.attrs["rpc.service"] != "weft.test.Store" ||
			s.name != "weft.test.Store/"+fmt.Sprint(s.attrs["rpc.method"]) || s.res["process.pid"] != wantPid {
			t.Errorf("span %s", s)
		}
		k := key{s.kind, fmt.Sprint(s.attrs["rpc.method"]), attrInt(s, "rpc.grpc.status_code")}
		count[k]++
		// NOT_FOUND is the caller's error, not the server's.
		if wantErr := k.code != 0 && k.kind == tracepb.Span_SPAN_KIND_CLIENT; s.err != wantErr ||
			(wantErr && s.attrs["error.type"] != "NOT_FOUND") {
			t.Errorf("error status %v, want %v: %s", s.err, wantErr, s)
		}
	}
	checkCallPairs(t, got)
	for _, kind := range []tracepb.Span_SpanKind{tracepb.Span_SPAN_KIND_SERVER, tracepb.Span_SPAN_KIND_CLIENT} {
		for k, want := range map[key]int{{kind, "Get", 0}: n, {kind, "Get", 5}: n, {kind, "List", 0}: n} {
			if count[k] != want {
				t.Errorf("%v %s status %d: %d spans, want %d (all: %v)", k.kind, k.method, k.code, count[k], want, count)
			}
		}
	}
}

// checkCallPairs requires every client span a root and every server span
// the child of a client span of the same method and status, each client
// span the parent of one server span: both ends are traced on this host,
// so weft links the streams of one connection (h2link.go).
func checkCallPairs(t *testing.T, got []span) {
	t.Helper()
	byID := map[string]span{}
	for _, s := range got {
		byID[s.id] = s
	}
	used := map[string]bool{}
	for _, s := range got {
		if s.kind == tracepb.Span_SPAN_KIND_CLIENT {
			if s.parent != "" {
				t.Errorf("client span %s has a parent", s)
			}
			continue
		}
		cli, ok := byID[s.parent]
		if !ok || used[s.parent] || cli.kind != tracepb.Span_SPAN_KIND_CLIENT || cli.trace != s.trace ||
			cli.attrs["rpc.method"] != s.attrs["rpc.method"] || attrInt(cli, "rpc.grpc.status_code") != attrInt(s, "rpc.grpc.status_code") {
			t.Errorf("server span %s is not the child of a client span of its call (%s)", s, cli)
		}
		used[s.parent] = true
	}
}

// curl (nghttp2) as the HTTP/2 client of Go's server: 100 transfers in
// parallel over prior-knowledge h2c, then 5 over one connection upgraded
// from HTTP/1.1 (Upgrade: h2c), whose first request keeps the span the
// kernel gave it, with the traceparent weft injected: the server's span
// of it is the child of curl's.
func TestHTTP2Curl(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		name, server, flag string
		n                  int
	}{{"prior-knowledge", "-mode=h2c-server", "--http2-prior-knowledge", 100}, {"upgrade", "-mode=h2c-upgrade-server", "--http2", 5}} {
		t.Run(c.name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			srv, addr := startListener(t, exec.Command(bins.h2app, c.server))
			args := []string{"-sS", "--no-progress-meter", c.flag, "-w", "%{http_version} %{http_code}\\n"}
			if c.n > 5 {
				// Each on a connection of its own: curl 7.88 fails to reuse
				// a prior-knowledge connection to Go's server ("Error in the
				// HTTP2 framing layer"), weft or not.
				args = append(args, "-Z", "--parallel-max", "100", "--parallel-immediate")
			}
			for i := range c.n {
				args = append(args, "-o", "/dev/null", fmt.Sprintf("http://%s/req/%d", addr, i))
			}
			cli := startCurl(t, args...)
			startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", srv.Pid(), cli.pid))
			cli.run(t)
			if got := strings.Count("\n"+cli.stdout.Output(), "\n2 "); got != c.n {
				t.Fatalf("curl made %d HTTP/2 transfers, want %d:\n%s", got, c.n, cli.out.Output())
			}
			got := waitSpans(t, rcv, 2*c.n, 30*time.Second, func(s span) bool {
				return s.res["process.pid"] == int64(srv.Pid()) || s.res["process.pid"] == int64(cli.pid)
			})
			if len(got) != 2*c.n {
				t.Fatalf("%d transfers gave %d spans:\n%s", c.n, len(got), dump(got))
			}
			byKind := map[tracepb.Span_SpanKind]map[int]span{tracepb.Span_SPAN_KIND_SERVER: {}, tracepb.Span_SPAN_KIND_CLIENT: {}}
			for _, s := range got {
				i, err := strconv.Atoi(strings.TrimPrefix(fmt.Sprint(s.attrs["url.path"]), "/req/"))
				if err != nil || i < 0 || i >= c.n || byKind[s.kind] == nil {
					t.Fatalf("span %s", s)
				}
				if _, dup := byKind[s.kind][i]; dup {
					t.Fatalf("two %v spans of transfer %d:\n%s", s.kind, i, dump(got))
				}
				byKind[s.kind][i] = s
				wantProto := "2"
				if c.name == "upgrade" && i == 0 {
					wantProto = "1.1" // the request that asked for the upgrade
				}
				if s.attrs["network.protocol.version"] != wantProto || attrInt(s, "http.response.status_code") != h2Status(i) ||
					attrInt(s, "http.response.body.size") != h2BodyLen(i) || s.attrs["http.request.method"] != "GET" {
					t.Errorf("transfer %d: %s", i, s)
				}
			}
			for i := range c.n {
				srvSpan, cliSpan := byKind[tracepb.Span_SPAN_KIND_SERVER][i], byKind[tracepb.Span_SPAN_KIND_CLIENT][i]
				if c.name == "upgrade" && i == 0 {
					if srvSpan.parent != cliSpan.id || srvSpan.trace != cliSpan.trace {
						t.Errorf("upgrade request: server span %s is not the child of curl's %s", srvSpan, cliSpan)
					}
				} else if cliSpan.parent != "" || srvSpan.parent != cliSpan.id || srvSpan.trace != cliSpan.trace {
					t.Errorf("transfer %d: want curl's span a root and the server's its child: %s / %s", i, srvSpan, cliSpan)
				}
			}
		})
	}
}

// HTTP/2 clients' parents: a Go front service calls its backend over one
// HTTP/2 connection (h2c, then TLS), where the streams of 32 requests at
// once interleave, each sent from its request's own goroutine (and, for
// /fan/, from two goroutines it started). Every client span is the child
// of its own request's server span, none of another's, none split; every
// backend span is the child of the client span of its stream, linked on
// this host (HPACK leaves no room for injection).
func TestHTTP2ClientParents(t *testing.T) {
	setup(t)
	checkFrontCalls(t, h2FrontOf(bins.h2app, "-mode=h2-front"), h2Backend, h2Call)
}

// h2Backend: h2app's HTTP/2 server, h2c or over TLS.
func h2Backend(tls bool) []string {
	if tls {
		return []string{"-mode=https-server"}
	}
	return []string{"-mode=h2c-server"}
}

// h2FrontOf: the command of h2app build bin as a front in mode.
func h2FrontOf(bin, mode string) func(backAddr string, tls bool) *exec.Cmd {
	return func(backAddr string, tls bool) *exec.Cmd {
		return exec.Command(bin, mode, "-addr="+backAddr, "-tls="+strconv.FormatBool(tls))
	}
}

// grpc-go's client writes every stream's HEADERS on its connection's
// loopy-writer goroutine, several streams in one write; each call's
// client span still goes under the request that made it (h2claim.h). A Go
// front calls h2app's gRPC server on one connection, h2c and TLS: /req/N
// makes call CallN, /fan/N makes CallN_a and CallN_b from two goroutines
// at once; handlers on both sides wait. The front is built against
// grpc-go 1.85 and 1.81, whose loopy takes streams in another function.
func TestGRPCClientParents(t *testing.T) {
	setup(t)
	for _, front := range []struct{ name, bin string }{{"grpc-1.85", bins.h2app}, {"grpc-1.81", bins.h2appGRPC181}} {
		t.Run(front.name, func(t *testing.T) {
			checkFrontCalls(t, h2FrontOf(front.bin, "-mode=grpc-front"), func(tls bool) []string {
				return []string{"-mode=grpc-server", "-tls=" + strconv.FormatBool(tls)}
			}, grpcCall)
		})
	}
}

// checkFrontCalls starts h2app's backend (backendArgs, h2c then TLS) and
// a front (the command front makes) calling it over one HTTP/2
// connection, sends
// 300 numbered requests at c32 to /req/ (one call each) and to /fan/ (two
// from two goroutines), and requires every client span (named by call)
// under its own request and every backend span under its call
// (checkFrontParents), no other span, and every backend span linked on
// this host.
func checkFrontCalls(t *testing.T, front func(backAddr string, tls bool) *exec.Cmd, backendArgs func(tls bool) []string,
	call func(span) (name, request string, ok bool)) {
	t.Helper()
	for _, tls := range []bool{false, true} {
		name := map[bool]string{false: "h2c", true: "tls"}[tls]
		t.Run(name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			backend, backAddr := startListener(t, exec.Command(bins.h2app, backendArgs(tls)...))
			cmd := front(backAddr, tls)
			cmd.Env = append(append(os.Environ(), cmd.Env...), "OTEL_SERVICE_NAME=front")
			front, frontAddr := startListener(t, cmd)
			w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
			const n = 300
			for _, ep := range []frontPath{{"/req/", 1}, {"/fan/", 2}} {
				rcv.Reset()
				numberedLoad(t, "http://"+frontAddr+ep.path, n, 32)
				got := collectSpans(t, rcv, n*(1+2*ep.calls), 60*time.Second)
				right, backends := checkFrontParents(t, got, ep.path, call)
				if right != n*ep.calls || backends != n*ep.calls || len(got) != n*(1+2*ep.calls) {
					t.Errorf("%s: %d spans (want %d), %d client spans under their request (want %d), %d backend spans",
						ep.path, len(got), n*(1+2*ep.calls), right, n*ep.calls, backends)
				}
			}
			m, err := w.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			if m["h2_conns"] != 2 || m["h2_parents_unmatched"] != 0 || m["h2_streams_lost"] != 0 || m["parent_refused_ended"] != 0 ||
				m["parent_refused_unknown_runtime"] != 0 || m["h2_streams_linked"] != 3*n {
				t.Errorf("h2 conns %d (want 2: both ends of one), unmatched parents %d, streams lost %d, refused: ended %d, unknown %d, linked %d (want %d)",
					m["h2_conns"], m["h2_parents_unmatched"], m["h2_streams_lost"], m["parent_refused_ended"], m["parent_refused_unknown_runtime"],
					m["h2_streams_linked"], 3*n)
			}
		})
	}
}

// h2Call names the call a span of h2-front or its backend is (its path,
// /work/N[/leg]), and the number of the request it was made for.
func h2Call(s span) (name, request string, ok bool) {
	p, _ := s.attrs["url.path"].(string)
	if !strings.HasPrefix(p, "/work/") || s.attrs["network.protocol.version"] != "2" {
		return "", "", false
	}
	return p, requestOf(p), true
}

// grpcCall names the call a span of grpc-front or its backend is (its
// method, CallN[_leg], answered OK), and the number of its request.
func grpcCall(s span) (name, request string, ok bool) {
	method, _ := s.attrs["rpc.method"].(string)
	call, ok := strings.CutPrefix(method, "Call")
	if !ok || s.attrs["rpc.service"] != "weft.test.Work" || attrInt(s, "rpc.grpc.status_code") != 0 {
		return "", "", false
	}
	n, _, _ := strings.Cut(call, "_")
	return method, n, true
}

// checkFrontParents counts the front's client spans under the server span
// of their own numbered request (path+N), and the backend's server spans
// under the front's client span of the same call; it reports every other
// span. call names the call a span is.
func checkFrontParents(t *testing.T, got []span, path string,
	call func(span) (name, request string, ok bool)) (right, backends int) {
	t.Helper()
	byID := map[string]span{}
	for _, s := range got {
		byID[s.id] = s
	}
	for _, s := range got {
		name, n, isCall := call(s)
		switch {
		case s.service == "front" && s.kind == tracepb.Span_SPAN_KIND_SERVER && strings.HasPrefix(fmt.Sprint(s.attrs["url.path"]), path):
		case s.service == "front" && s.kind == tracepb.Span_SPAN_KIND_CLIENT && isCall:
			srv, ok := byID[s.parent]
			if !ok || srv.kind != tracepb.Span_SPAN_KIND_SERVER || srv.attrs["url.path"] != path+n || srv.trace != s.trace {
				t.Errorf("%s: client span %s under %q (%s)", path, s, srv.attrs["url.path"], s.parent)
				continue
			}
			right++
		case s.service == "h2app" && s.kind == tracepb.Span_SPAN_KIND_SERVER && isCall:
			cli, ok := byID[s.parent]
			cliName, _, _ := call(cli)
			if !ok || cli.service != "front" || cli.kind != tracepb.Span_SPAN_KIND_CLIENT || cliName != name || cli.trace != s.trace {
				t.Errorf("%s: backend span %s is not the child of the front's call of it", path, s)
				continue
			}
			backends++
		default:
			t.Errorf("%s: unexpected span %s", path, s)
		}
	}
	return right, backends
}
