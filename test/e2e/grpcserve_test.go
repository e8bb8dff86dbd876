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

// A grpc-go server stream whose HEADERS carry a traceparent: its handler
// serves the stream's span (h2serve.h), so the handler's own calls go
// under it. h2app's gRPC server answers /weft.test.Work/Call<i> after a
// wait that depends on i and a GET /work/<i> to websrv (which waits too);
// an untraced client makes 300 calls at once on one connection, each with
// a traceparent of its own (trace 0xabc000+i, span 0xdef000+i). Every
// server span must join its call's trace under the span the traceparent
// names, every GET must go under the server span of the same call, and
// websrv's span under that GET: 900 spans, no other. h2c and TLS, grpc-go
// 1.85 and 1.81.
func TestGRPCServerHandlerParents(t *testing.T) {
	setup(t)
	for _, srv := range []struct{ name, bin string }{{"grpc-1.85", bins.h2app}, {"grpc-1.81", bins.h2appGRPC181}} {
		for _, tls := range []bool{false, true} {
			t.Run(srv.name+"/"+map[bool]string{false: "h2c", true: "tls"}[tls], func(t *testing.T) {
				const n = 300
				rcv := otlptest.Start(t)
				back, backAddr := startServer(t)
				mid, midAddr := startListener(t, exec.Command(srv.bin, "-mode=grpc-server", "-tls="+strconv.FormatBool(tls),
					"-backend="+backAddr))
				cli := startGoClient(t, "-mode=grpc-traced-client", "-tls="+strconv.FormatBool(tls), "-addr="+midAddr,
					"-n="+strconv.Itoa(n))
				w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", mid.Pid(), back.Pid()))
				cli.run(t)
				if !strings.Contains(cli.stdout.Output(), "ok") {
					t.Fatalf("client: %s", cli.out.Output())
				}
				got := collectSpans(t, rcv, 3*n, 60*time.Second)
				checkHandlerParents(t, got, n, mid.Pid(), back.Pid(), backAddr)
				m, err := w.Metrics()
				if err != nil {
					t.Fatal(err)
				}
				if m["h2_served_unmatched"] != 0 || m["h2_streams_lost"] != 0 || m["parent_refused_ended"] != 0 ||
					m["parent_refused_unknown_runtime"] != 0 {
					t.Errorf("served streams unmatched %d, streams lost %d, parents refused: ended %d, unknown %d\n%v",
						m["h2_served_unmatched"], m["h2_streams_lost"], m["parent_refused_ended"], m["parent_refused_unknown_runtime"], m)
				}
			})
		}
	}
}

// checkHandlerParents requires, for each call i of n, the gRPC server
// span in the traceparent's trace under its span, the GET /work/i its
// handler made under that server span, and websrv's span of it under the
// GET; and no other span.
func checkHandlerParents(t *testing.T, got []span, n, midPid, backPid int, backAddr string) {
	t.Helper()
	servers, gets, backs := map[int]span{}, map[int]span{}, map[int]span{}
	for _, s := range got {
		pid := s.res["process.pid"]
		var call string
		var into map[int]span
		switch {
		case pid == int64(midPid) && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			call, _ = strings.CutPrefix(fmt.Sprint(s.attrs["rpc.method"]), "Call")
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
	for i := range n {
		srv, get, back := servers[i], gets[i], backs[i]
		trace, parent := fmt.Sprintf("%032x", 0xabc000+i), fmt.Sprintf("%016x", 0xdef000+i)
		switch {
		case srv.trace != trace || srv.parent != parent:
			t.Errorf("call %d: server span %s, want trace %s under %s", i, srv, trace, parent)
		case get.trace != trace || get.parent != srv.id:
			t.Errorf("call %d: GET %s, want it under the server span %s", i, get, srv.id)
		case back.trace != trace || back.parent != get.id:
			t.Errorf("call %d: websrv's span %s, want it under the GET %s", i, back, get.id)
		default:
			right++
		}
	}
	if right != n || len(got) != 3*n {
		t.Errorf("%d of %d calls with their three spans right; %d spans (want %d)", right, n, len(got), 3*n)
	}
}
