package e2e

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// A grpc-go server stream's handler serves the stream's span
// (h2serve.h), so the handler's own calls go under it. h2app's gRPC server
// answers /weft.test.Work/Call<i> after a wait that depends on i and a
// GET /work/<i> to websrv (which waits too); an untraced client makes 300
// calls, 32 at a time, on one connection. With a traceparent of its own
// on each call (trace 0xabc000+i, span 0xdef000+i), every server span
// must join its call's trace under the span the traceparent names;
// without, every server span must start a trace of its own, the
// connection's first streams included (the kernel knows at the client
// preface that the client is not traced here, h2peer.h). Every GET must go under the
// server span of the same call, and websrv's span under that GET: 900
// spans, no other. h2c and TLS, grpc-go 1.85 and 1.81.
func TestGRPCServerHandlerParents(t *testing.T) {
	setup(t)
	for _, srv := range []struct{ name, bin string }{{"grpc-1.85", bins.h2app}, {"grpc-1.81", bins.h2appGRPC181}} {
		for _, tls := range []bool{false, true} {
			for _, untraced := range []bool{false, true} {
				name := srv.name + "/" + map[bool]string{false: "h2c", true: "tls"}[tls] +
					map[bool]string{false: "", true: "/no-traceparent"}[untraced]
				t.Run(name, func(t *testing.T) {
					handlerChains(t, func(backAddr string) *exec.Cmd {
						return exec.Command(srv.bin, "-mode=grpc-server", "-tls="+strconv.FormatBool(tls), "-backend="+backAddr)
					}, untraced, "-mode=grpc-traced-client", "-tls="+strconv.FormatBool(tls))
				})
			}
		}
	}
}

// The same for Go's HTTP/2 server (h2serve.h): h2app serves /req/<i>
// after a wait that depends on i and a GET /work/<i> to websrv; an
// untraced client makes 300 requests over one HTTP/2 connection, 32 at a
// time, with and without a traceparent. net/http's server over h2c
// (prior knowledge) and TLS, and x/net/http2's (h2c's handler) letting 8
// streams run at once, with the client sending 8 at a time: a stream the
// client opens as soon as another ended may find that one's handler still
// running, and its handler starts later (net/http queues it).
func TestHTTP2ServerHandlerParents(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		name, server, client string
		tls, untraced        bool
	}{{"net-http/h2c", "-mode=h2c-server", "", false, false}, {"net-http/tls", "-mode=https-server", "", true, false},
		{"x-net/h2c", "-mode=h2c-upgrade-server -max-streams=8", "-at-once=8", false, false},
		{"net-http/h2c/no-traceparent", "-mode=h2c-server", "", false, true},
		{"net-http/tls/no-traceparent", "-mode=https-server", "", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			handlerChains(t, func(backAddr string) *exec.Cmd {
				return exec.Command(bins.h2app, append(strings.Fields(c.server), "-backend="+backAddr)...)
			}, c.untraced, append(strings.Fields(c.client), "-mode=h2-traced-client", "-tls="+strconv.FormatBool(c.tls))...)
		})
	}
}

// handlerChains starts the server command made for websrv's address, and
// h2app's client with clientArgs sending 300 calls to it on a connection
// it opens then (untraced: with no traceparent); weft traces the server and
// websrv. Each call's chain must be right (checkHandlerParents), every
// served stream's report taken (untraced: each a new trace), no stream
// lost and no parent refused.
func handlerChains(t *testing.T, server func(backAddr string) *exec.Cmd, untraced bool, clientArgs ...string) {
	t.Helper()
	const n = 300
	rcv := otlptest.Start(t)
	back, backAddr := startServer(t)
	mid, midAddr := startListener(t, server(backAddr))
	if untraced {
		clientArgs = append(clientArgs, "-no-traceparent")
	}
	cli := startGoClient(t, append(clientArgs, "-addr="+midAddr, "-n="+strconv.Itoa(n))...)
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", mid.Pid(), back.Pid()))
	cli.run(t)
	if !strings.Contains(cli.stdout.Output(), "ok") {
		t.Fatalf("client: %s", cli.out.Output())
	}
	got := collectSpans(t, rcv, 3*n, 60*time.Second)
	checkHandlerParents(t, got, n, mid.Pid(), back.Pid(), backAddr, untraced)
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	newTraces := uint64(0)
	if untraced {
		newTraces = n
	}
	if m["h2_served_unmatched"] != 0 || m["h2_served_new"] != newTraces || m["h2_streams_lost"] != 0 ||
		m["parent_refused_ended"] != 0 || m["parent_refused_unknown_runtime"] != 0 {
		t.Errorf("served streams unmatched %d, new traces %d (want %d), streams lost %d, parents refused: ended %d, unknown %d\n%v",
			m["h2_served_unmatched"], m["h2_served_new"], newTraces, m["h2_streams_lost"], m["parent_refused_ended"],
			m["parent_refused_unknown_runtime"], m)
	}
}

// checkHandlerParents requires, for each call i of n, the server span
// (gRPC's Call<i>, or HTTP's /req/<i>) in the traceparent's trace under
// its span (untraced: a root, in a trace of its own), the GET /work/i its
// handler made under that server span, and websrv's span of it under the
// GET; and no other span.
func checkHandlerParents(t *testing.T, got []span, n, midPid, backPid int, backAddr string, untraced bool) {
	t.Helper()
	servers, gets, backs := map[int]span{}, map[int]span{}, map[int]span{}
	for _, s := range got {
		pid := s.res["process.pid"]
		var call string
		var into map[int]span
		switch {
		case pid == int64(midPid) && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			if m, ok := s.attrs["rpc.method"]; ok {
				call, _ = strings.CutPrefix(fmt.Sprint(m), "Call")
			} else {
				call, _ = strings.CutPrefix(fmt.Sprint(s.attrs["url.path"]), "/req/")
			}
			into = servers
		case pid == int64(midPid) && s.kind == tracepb.Span_SPAN_KIND_CLIENT:
			call, _ = strings.CutPrefix(fmt.Sprint(s.attrs["url.full"]), "http://"+backAddr+"/work/")
			into = gets
		case pid == int64(backPid) && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			call, _ = strings.CutPrefix(fmt.Sprint(s.attrs["url.path"]), "/work/")
			into = backs
		}
		i, err := strconv.Atoi(call)
		if into == nil || err != nil || i < 0 || i >= n {
			t.Errorf("unexpected span %s", s)
			continue
		}
		if _, dup := into[i]; dup {
			t.Errorf("call %d: a second span %s", i, s)
		}
		into[i] = s
	}
	right := 0
	traces := map[string]int{}
	for i := range n {
		srv, get, back := servers[i], gets[i], backs[i]
		trace, parent := fmt.Sprintf("%032x", 0xabc000+i), fmt.Sprintf("%016x", 0xdef000+i)
		if untraced {
			trace, parent = srv.trace, ""
		}
		switch {
		case srv.trace != trace || srv.parent != parent:
			t.Errorf("call %d: server span %s, want trace %s under %q", i, srv, trace, parent)
		case untraced && traces[trace] != 0:
			t.Errorf("call %d: server span %s in call %d's trace", i, srv, traces[trace]-1)
		case get.trace != trace || get.parent != srv.id:
			t.Errorf("call %d: GET %s, want it under the server span %s", i, get, srv.id)
		case back.trace != trace || back.parent != get.id:
			t.Errorf("call %d: websrv's span %s, want it under the GET %s", i, back, get.id)
		default:
			right++
		}
		traces[trace] = i + 1
	}
	if right != n || len(got) != 3*n {
		t.Errorf("%d of %d calls with their three spans right; %d spans (want %d)", right, n, len(got), 3*n)
	}
}

// A Go HTTP/2 server's handler serves the span of its stream when weft
// follows the client on this host too (h2link.h): the client's kernel
// side decides the stream's span before its HEADERS leave, and the
// server's takes it where it decodes them. h2app's front (traced) serves
// /req/<i> by calling a traced h2app server, whose handler GETs
// /work/<i> from websrv: over gRPC (grpc-go 1.85 and 1.81, h2c and TLS)
// and net/http's HTTP/2 (h2c and TLS), 300 requests at c32 on one
// connection. The connection's first stream, a warm-up call, cannot be
// decided (the client learns its connection's socket at its first write):
// its server span is linked in user space, and its handler's GET is a
// trace of its own, counted. A Node.js front (node:http2) and a Python
// one (httpx), their streams claimed by the companions, have every
// stream decided before its write leaves (h2seed.h: at SSL_write's
// entry, or in sk_msg for h2c), the warm-up's too over TLS; over h2c,
// the warm-up's only if the server had read the preface by then. Then
// every request is one chain of five
// spans: the front's server span, its call, the server's span under the
// call (linked in the kernel, counted), the handler's GET under that,
// websrv's span under the GET; 1500 spans, no other.
func TestH2HandlerParentsBothEndsTraced(t *testing.T) {
	setup(t)
	for _, c := range []struct {
		name, bin, front, server string
		tls                      bool
	}{
		{"grpc-1.85/h2c", bins.h2app, "-mode=grpc-front", "-mode=grpc-server", false},
		{"grpc-1.85/tls", bins.h2app, "-mode=grpc-front", "-mode=grpc-server", true},
		{"grpc-1.81/h2c", bins.h2appGRPC181, "-mode=grpc-front", "-mode=grpc-server", false},
		{"net-http/h2c", bins.h2app, "-mode=h2-front -call-path=/req/", "-mode=h2c-server", false},
		{"net-http/tls", bins.h2app, "-mode=h2-front -call-path=/req/", "-mode=https-server", true},
		{"node/tls", "node", "", "-mode=https-server", true},
		{"python-httpx/tls", "python", "", "-mode=https-server", true},
		{"node/h2c", "node", "", "-mode=h2c-server", false},
		{"python-httpx/h2c", "python", "", "-mode=h2c-server", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 300
			rcv := otlptest.Start(t)
			back, backAddr := startServer(t)
			tls := "-tls=" + strconv.FormatBool(c.tls)
			// Node.js's node:http2 and Python's httpx over OpenSSL, whose
			// streams their companions claim: the kernel decides their
			// spans as their writes begin (h2seed.h), the first stream's
			// too.
			companion := c.bin == "node" || c.bin == "python"
			server := c.bin
			if companion {
				server = bins.h2app
			}
			mid, midAddr := startListener(t, exec.Command(server, c.server, tls, "-backend="+backAddr))
			var frontCmd *exec.Cmd
			switch c.bin {
			case "node":
				app, lib := nodeAsync(t)
				frontCmd = exec.Command("node", app, midAddr, map[bool]string{false: "h2", true: "h2-tls"}[c.tls], "/req/")
				frontCmd.Env = []string{"NODE_OPTIONS=--require " + lib}
			case "python":
				app, venv, lib := pyAsync(t)
				frontCmd = exec.Command(venv, app, midAddr, "fastapi", map[bool]string{false: "httpx-h2", true: "httpx-h2-tls"}[c.tls])
				frontCmd.Env = []string{"PYTHONPATH=" + lib, "CALL_PATH=/req/"}
			default:
				frontCmd = exec.Command(c.bin, append(strings.Fields(c.front), tls, "-addr="+midAddr)...)
			}
			front, frontAddr := startListener(t, frontCmd)
			w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d,%d", front.Pid(), mid.Pid(), back.Pid()))
			get(t, "http://"+frontAddr+"/req/0")
			collectSpans(t, rcv, 5, 30*time.Second)
			m0, err := w.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			rcv.Reset()
			numberedLoad(t, "http://"+frontAddr+"/req/", n, 32)
			got := collectSpans(t, rcv, 5*n, 60*time.Second)
			right := checkBothEndsChains(t, got, n, front.Pid(), mid.Pid(), back.Pid())
			if right != n || len(got) != 5*n {
				t.Errorf("%d of %d requests with their five spans right; %d spans (want %d)", right, n, len(got), 5*n)
			}
			m, err := w.Metrics()
			if err != nil {
				t.Fatal(err)
			}
			roots, servedLinked, opened := uint64(1), uint64(n), uint64(0)
			if companion {
				// The kernel decides a stream once the server end has
				// read from the connection: over TLS it read the
				// ClientHello before any stream; over h2c, the warm-up's
				// stream is decided only if its write came after the
				// server's read of the preface (decided: 1).
				decided := uint64(1)
				if !c.tls {
					if decided = m0["h2_opened"]; decided > 1 {
						t.Errorf("%d streams decided in the kernel in the warm-up, want at most 1", decided)
					}
				}
				roots, servedLinked, opened = 1-decided, n+decided, n+decided
			}
			if m0["spans_client_root"] != roots || m["spans_client_root"] != roots || m["h2_served_linked"] != servedLinked ||
				m["h2_streams_linked"] != n+1 || m["h2_served_unmatched"] != 0 || m["h2_served_new"] != 0 ||
				m["h2_streams_lost"] != 0 || m["parent_refused_ended"] != 0 ||
				m["h2_opened"] != opened || m["h2_opened_unmatched"] != 0 {
				t.Errorf("client spans without parent %d after the warm-up, %d in all (want %d); served streams linked in the kernel %d (want %d), linked %d (want %d), unmatched %d, new %d; streams lost %d, parents refused as ended %d; client streams decided in the kernel %d (want %d), unmatched %d",
					m0["spans_client_root"], m["spans_client_root"], roots, m["h2_served_linked"], servedLinked, m["h2_streams_linked"], n+1,
					m["h2_served_unmatched"], m["h2_served_new"], m["h2_streams_lost"], m["parent_refused_ended"],
					m["h2_opened"], opened, m["h2_opened_unmatched"])
			}
		})
	}
}

// checkBothEndsChains counts the requests 1..n whose five spans are one
// chain (TestH2HandlerParentsBothEndsTraced), reporting any other span.
func checkBothEndsChains(t *testing.T, got []span, n, frontPid, midPid, backPid int) int {
	t.Helper()
	const (
		frontServer = iota
		frontCall
		midServer
		midGet
		backServer
	)
	chains := map[int]*[5]span{}
	for _, s := range got {
		pid := s.res["process.pid"]
		role, num := -1, ""
		call := fmt.Sprint(s.attrs["url.path"])
		if m, ok := s.attrs["rpc.method"]; ok {
			call = "/req/" + strings.TrimPrefix(fmt.Sprint(m), "Call")
		}
		switch {
		case pid == int64(frontPid) && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			role, num = frontServer, strings.TrimPrefix(call, "/req/")
		case pid == int64(frontPid) && s.kind == tracepb.Span_SPAN_KIND_CLIENT:
			role, num = frontCall, strings.TrimPrefix(call, "/req/")
		case pid == int64(midPid) && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			role, num = midServer, strings.TrimPrefix(call, "/req/")
		case pid == int64(midPid) && s.kind == tracepb.Span_SPAN_KIND_CLIENT:
			role, num = midGet, strings.TrimPrefix(call, "/work/")
		case pid == int64(backPid) && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			role, num = backServer, strings.TrimPrefix(call, "/work/")
		}
		i, err := strconv.Atoi(num)
		if role < 0 || err != nil || i < 1 || i > n {
			t.Errorf("unexpected span %s", s)
			continue
		}
		c := chains[i]
		if c == nil {
			c = &[5]span{}
			chains[i] = c
		}
		if c[role].id != "" {
			t.Errorf("request %d: a second span %s", i, s)
		}
		c[role] = s
	}
	right := 0
	for i := 1; i <= n; i++ {
		c := chains[i]
		if c == nil {
			t.Errorf("request %d: no spans", i)
			continue
		}
		ok := c[frontServer].id != "" && c[frontServer].parent == ""
		for r := frontCall; ok && r <= backServer; r++ {
			ok = c[r].id != "" && c[r].parent == c[r-1].id && c[r].trace == c[frontServer].trace
		}
		if !ok {
			t.Errorf("request %d: not one chain: %s / %s / %s / %s / %s", i, c[0], c[1], c[2], c[3], c[4])
			continue
		}
		right++
	}
	return right
}
