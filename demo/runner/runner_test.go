package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The runner's privileged half (Jaeger, JVMs, weft) runs in make
// demo-test; these tests cover what decides its verdicts and its output.

func TestPortsDistinctAndInRange(t *testing.T) {
	p := portsFrom(defaultPortBase)
	all := p.all()
	if len(all) != 8 {
		t.Fatalf("%d distinct ports, want 8: %v", len(all), all)
	}
	for port := range all {
		if port < defaultPortBase || port > defaultPortBase+9 {
			t.Errorf("port %d outside base..base+9", port)
		}
	}
	if p.frontend != 19480 || p.jaegerQuery != 19486 || p.jaegerOTLP != 19487 {
		t.Errorf("the documented layout changed: %+v", p)
	}
}

func TestCheckPortsNamesTheBusyOne(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	// A base whose frontend port is the one taken.
	err = checkPorts(portsFrom(busy))
	if err == nil || !strings.Contains(err.Error(), strconv.Itoa(busy)+" (frontend)") {
		t.Errorf("checkPorts with %d taken: %v", busy, err)
	}
}

func TestJaegerConfigUsesOnlyDemoPorts(t *testing.T) {
	cfg := jaegerConfig(portsFrom(20000))
	for _, want := range []string{"127.0.0.1:20006", "127.0.0.1:20005", "127.0.0.1:20007", "enable_tracing: false"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	for _, wellKnown := range []string{"4317", "4318", "16686", "16685", "8888", "13133"} {
		if strings.Contains(cfg, ":"+wellKnown) {
			t.Errorf("config takes the well-known port %s:\n%s", wellKnown, cfg)
		}
	}
}

// loadTrace reads a trace as Jaeger v1.76.0's /api/traces/{id} returned it.
func loadTrace(t *testing.T, name string) trace {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ Data []apiTrace }
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Data) != 1 {
		t.Fatalf("%s: %d traces", name, len(r.Data))
	}
	return convert(r.Data[0])
}

func TestRenderRealTrace(t *testing.T) {
	tr := loadTrace(t, "trace-parallel.json")
	got := renderTree(tr)
	want := `frontend       GET /parallel  server  72.3 ms
├─ frontend    GET /work      client  39.2 ms
│  └─ backend  GET /work      server  25.0 ms
└─ frontend    GET /work      client  30.8 ms
   └─ backend  GET /work      server  29.8 ms
`
	if got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if err := wholeTree(tr, "frontend", "/parallel", 2); err != nil {
		t.Errorf("a real whole /parallel trace: %v", err)
	}
	if err := wholeTree(tr, "frontend", "/parallel", 1); err == nil {
		t.Error("two calls accepted where one is expected")
	}
	s, _ := slowest([]trace{tr})
	if s.name != "GET /parallel" || s.kind != "server" {
		t.Errorf("slowest span: %+v", s)
	}
}

// Synthetic traces, built the way convert builds them.

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func sp(trace, id, parent, service, kind, path, ua string, at, dur int) span {
	s := span{traceID: trace, id: id, parent: parent, service: service, kind: kind, name: "GET " + path,
		start: t0.Add(time.Duration(at) * time.Millisecond), dur: time.Duration(dur) * time.Millisecond,
		tags: map[string]string{"url.path": path}}
	if ua != "" {
		s.tags[uaKey] = ua
	}
	return s
}

func req(ua string, at, dur int) request {
	return request{ua: ua, start: t0.Add(time.Duration(at) * time.Millisecond),
		end: t0.Add(time.Duration(at+dur) * time.Millisecond), status: 200}
}

// whole is one request's whole /direct trace.
func whole(id, ua string, at int) trace {
	return trace{id: id, spans: []span{
		sp(id, id+"s", "", "frontend", "server", "/direct", ua, at, 40),
		sp(id, id+"c", id+"s", "frontend", "client", "/work", "", at+5, 30),
		sp(id, id+"b", id+"c", "backend", "server", "/work", "ktor", at+6, 28),
	}}
}

func TestJudgeWhole(t *testing.T) {
	g := group{ep: endpoint{service: "frontend", path: "/direct", calls: 1, assert: true},
		reqs: []request{req("a", 0, 50), req("b", 200, 50)}}
	if v := judge(g, []trace{whole("t1", "a", 1), whole("t2", "b", 201)}); !v.ok() {
		t.Errorf("two whole traces: %v", v.problems)
	}

	// The backend span under the server span instead of the client span.
	bad := whole("t2", "b", 201)
	bad.spans[2].parent = "t2s"
	if v := judge(g, []trace{whole("t1", "a", 1), bad}); v.ok() || !strings.Contains(strings.Join(v.problems, "\n"), "request #2") {
		t.Errorf("wrong parent edge accepted: %v", v.problems)
	}

	// Request b split: its call in a trace of its own.
	server := trace{id: "t2", spans: []span{sp("t2", "t2s", "", "frontend", "server", "/direct", "b", 201, 40)}}
	call := trace{id: "t3", spans: []span{
		sp("t3", "t3c", "", "frontend", "client", "/work", "", 206, 30),
		sp("t3", "t3b", "t3c", "backend", "server", "/work", "ktor", 207, 28),
	}}
	v := judge(g, []trace{whole("t1", "a", 1), server, call})
	if v.ok() {
		t.Fatal("a split request accepted as whole")
	}
	if err := failures([]verdict{v}); err == nil || !strings.Contains(err.Error(), "a trace of no request") {
		t.Errorf("failures: %v", err)
	}

	// A request whose server span never reached Jaeger.
	if v := judge(g, []trace{whole("t1", "a", 1)}); v.ok() {
		t.Error("a missing trace accepted")
	}
}

func TestJudgeSplit(t *testing.T) {
	g := group{ep: endpoint{service: "frontend-noagent", path: "/direct", calls: 1, want: shapeSplit, assert: true},
		reqs: []request{req("a", 0, 50), req("b", 200, 50)}}
	split := func(n, ua string, at int) []trace {
		return []trace{
			{id: n + "s", spans: []span{sp(n+"s", n+"S", "", "frontend-noagent", "server", "/direct", ua, at, 40)}},
			{id: n + "c", spans: []span{
				sp(n+"c", n+"C", "", "frontend-noagent", "client", "/work", "", at+5, 30),
				sp(n+"c", n+"B", n+"C", "backend", "server", "/work", "ktor", at+6, 28),
			}},
		}
	}
	ts := append(split("x", "a", 1), split("y", "b", 201)...)
	v := judge(g, ts)
	if !v.ok() {
		t.Fatalf("two split requests: %v", v.problems)
	}
	if !strings.Contains(v.summary, "4 traces") || !strings.Contains(v.summary, "split in 2") {
		t.Errorf("summary %q", v.summary)
	}
	// The second request's pair: its own trace and the call that began while it ran.
	pair := splitFor(v, 1)
	if len(pair) != 2 || pair[0].id != "ys" || pair[1].id != "yc" {
		t.Errorf("splitFor: %v", pair)
	}

	// Whole traces where a split is expected: the agent would be on.
	wholes := []trace{whole("t1", "a", 1), whole("t2", "b", 201)}
	for i := range wholes {
		for j := range wholes[i].spans {
			wholes[i].spans[j].service = strings.Replace(wholes[i].spans[j].service, "frontend", "frontend-noagent", 1)
		}
	}
	if v := judge(g, wholes); v.ok() {
		t.Error("whole traces accepted where the split is expected")
	}
}

func TestJudgeSingle(t *testing.T) {
	g := group{ep: endpoint{service: "backend", path: "/work", want: shapeSingle, assert: true},
		reqs: []request{req("a", 0, 30)}}
	ok := trace{id: "t", spans: []span{sp("t", "s", "", "backend", "server", "/work", "a", 1, 25)}}
	if v := judge(g, []trace{ok}); !v.ok() {
		t.Errorf("one backend span: %v", v.problems)
	}
	if expectedSpans(g) != 1 {
		t.Errorf("expectedSpans %d", expectedSpans(g))
	}
}

// The API client asks for a window in microseconds and reads Jaeger's
// answer, errors included.
func TestJaegerSearch(t *testing.T) {
	body, err := os.ReadFile("testdata/trace-parallel.json")
	if err != nil {
		t.Fatal(err)
	}
	from, to := t0, t0.Add(time.Second)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		switch {
		case r.URL.Path == "/api/traces" && q.Get("service") == "frontend" &&
			q.Get("start") == strconv.FormatInt(from.UnixMicro(), 10) && q.Get("end") == strconv.FormatInt(to.UnixMicro(), 10):
			w.Write(body)
		case r.URL.Path == "/api/traces":
			w.Write([]byte(`{"data":null,"total":0,"limit":0,"offset":0,"errors":null}`))
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"data":null,"errors":[{"code":404,"msg":"trace not found"}]}`)
		}
	}))
	defer srv.Close()
	api := jaegerAPI{base: srv.URL, client: srv.Client()}
	ctx := context.Background()
	ts, err := api.search(ctx, "frontend", from, to)
	if err != nil || len(ts) != 1 || len(ts[0].spans) != 5 {
		t.Fatalf("search: %v, %d traces", err, len(ts))
	}
	if ts, err := api.search(ctx, "jfront", from, to); err != nil || len(ts) != 0 {
		t.Errorf("empty search: %v %v", ts, err)
	}
	if _, err := api.trace(ctx, "00"); err == nil || !strings.Contains(err.Error(), "trace not found") {
		t.Errorf("missing trace: %v", err)
	}
}
