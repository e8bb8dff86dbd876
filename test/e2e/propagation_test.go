package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// chain is three services in three runtimes, each calling the next from
// the thread serving the request: Go (front) → Python (middle) → Java (leaf).
type chain struct {
	front, middle, leaf *proc
	url                 string // the front's /call
	middleURL           string // the middle's /call
}

// startChain starts the three services, env added to each one's
// environment.
func startChain(t *testing.T, env ...string) chain {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatal("java not found: the propagation chain needs a JDK")
	}
	dir := filepath.Join(repoRoot(), "test", "e2e", "testdata")
	leafCmd := exec.Command("java", filepath.Join(dir, "Leaf.java"))
	leafCmd.Env = append(os.Environ(), append([]string{"OTEL_SERVICE_NAME=leaf"}, env...)...)
	leaf, leafAddr := startListener(t, leafCmd)
	midCmd := exec.Command("python3", filepath.Join(dir, "chain.py"), "http://"+leafAddr+"/work")
	midCmd.Env = append(os.Environ(), append([]string{"OTEL_SERVICE_NAME=middle"}, env...)...)
	middle, midAddr := startListener(t, midCmd)
	frontCmd := exec.Command(bins.websr, "-mode=thread", "-downstream="+midAddr, "-downstream-path=/call")
	frontCmd.Env = append(os.Environ(), append([]string{"OTEL_SERVICE_NAME=front"}, env...)...)
	front, frontAddr := startListener(t, frontCmd)
	return chain{front: front, middle: middle, leaf: leaf, url: "http://" + frontAddr + "/call", middleURL: "http://" + midAddr + "/call"}
}

func (c chain) pids() string {
	return fmt.Sprintf("%d,%d,%d", c.front.Pid(), c.middle.Pid(), c.leaf.Pid())
}

// checkChainTrace asserts that spans form one request's trace through the
// chain: front SERVER → front CLIENT → middle SERVER → middle CLIENT →
// leaf SERVER, each the parent of the next, and returns the root.
func checkChainTrace(t *testing.T, spans []span) span {
	t.Helper()
	want := []struct {
		service string
		kind    tracepb.Span_SpanKind
		path    string
	}{
		{"front", tracepb.Span_SPAN_KIND_SERVER, "/call"},
		{"front", tracepb.Span_SPAN_KIND_CLIENT, "/call"},
		{"middle", tracepb.Span_SPAN_KIND_SERVER, "/call"},
		{"middle", tracepb.Span_SPAN_KIND_CLIENT, "/work"},
		{"leaf", tracepb.Span_SPAN_KIND_SERVER, "/work"},
	}
	if len(spans) != len(want) {
		t.Fatalf("trace has %d spans, want %d:\n%s", len(spans), len(want), dump(spans))
	}
	byID := map[string]span{}
	for _, s := range spans {
		byID[s.id] = s
	}
	var chainOrder []span
	for _, w := range want {
		found := false
		for _, s := range spans {
			if s.service == w.service && s.kind == w.kind && s.attrs["url.path"] == w.path {
				chainOrder = append(chainOrder, s)
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("no %s %v %s span in:\n%s", w.service, w.kind, w.path, dump(spans))
		}
	}
	for i := 1; i < len(chainOrder); i++ {
		if chainOrder[i].parent != chainOrder[i-1].id {
			t.Fatalf("%s %v's parent is %s, want %s (%s %v):\n%s", chainOrder[i].service, chainOrder[i].kind,
				chainOrder[i].parent, chainOrder[i-1].id, chainOrder[i-1].service, chainOrder[i-1].kind, dump(spans))
		}
	}
	for _, s := range spans {
		if s.trace != spans[0].trace {
			t.Fatalf("spans of two traces mixed:\n%s", dump(spans))
		}
		if attrInt(s, "http.response.status_code") != 200 || s.attrs["error.type"] != nil || s.err {
			t.Errorf("span not a plain 200: %s", s)
		}
	}
	return chainOrder[0]
}

func byTrace(spans []span) map[string][]span {
	m := map[string][]span{}
	for _, s := range spans {
		m[s.trace] = append(m[s.trace], s)
	}
	return m
}

func TestPropagationThreeRuntimes(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	c := startChain(t)
	startWeft(t, rcv, "--pid="+c.pids())

	if out := curl(t, c.url); !strings.Contains(out, "downstream said 200") {
		t.Fatalf("chain answered %q", out)
	}
	got := waitSpans(t, rcv, 5, 30*time.Second, func(span) bool { return true })
	root := checkChainTrace(t, got)
	if root.parent != "" {
		t.Errorf("a request without traceparent must start a trace: root has parent %s", root.parent)
	}

	rcv.Reset()
	const incoming = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	curl(t, "-H", "traceparent: "+incoming, c.url)
	got = waitSpans(t, rcv, 5, 30*time.Second, func(span) bool { return true })
	root = checkChainTrace(t, got)
	if root.trace != "0af7651916cd43dd8448eb211c80319c" || root.parent != "b7ad6b7169203331" {
		t.Errorf("incoming traceparent not continued: root %s", root)
	}
}

func TestPropagationConcurrency(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	c := startChain(t)
	w := startWeft(t, rcv, "--pid="+c.pids())

	const n = 500
	load(t, c.url, n, 20)
	got := waitSpans(t, rcv, 5*n, 90*time.Second, func(span) bool { return true })
	traces := byTrace(got)
	if len(traces) != n {
		m, _ := w.Metrics()
		t.Fatalf("%d requests gave %d traces (%d spans); metrics %v", n, len(traces), len(got), m)
	}
	for _, spans := range traces {
		checkChainTrace(t, spans)
	}
	m, _ := w.Metrics()
	t.Logf("metrics: %v", m)
}

// A request whose downstream call is made by a thread the serving thread
// created keeps its parent: the kernel follows the thread's creator.
func TestPropagationThroughHelperThread(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	c := startChain(t)
	startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", c.middle.Pid(), c.leaf.Pid()))

	mid := strings.TrimSuffix(strings.TrimPrefix(c.middleURL, "http://"), "/call")
	if out := curl(t, "http://"+mid+"/spawn"); !strings.Contains(out, "downstream said 200") {
		t.Fatalf("middle answered %q", out)
	}
	got := waitSpans(t, rcv, 3, 30*time.Second, func(span) bool { return true })
	var srv, cli, leaf span
	for _, s := range got {
		switch {
		case s.service == "middle" && s.kind == tracepb.Span_SPAN_KIND_SERVER:
			srv = s
		case s.service == "middle" && s.kind == tracepb.Span_SPAN_KIND_CLIENT:
			cli = s
		case s.service == "leaf":
			leaf = s
		}
	}
	if len(got) != 3 || srv.id == "" || cli.parent != srv.id || leaf.parent != cli.id || leaf.trace != srv.trace {
		t.Fatalf("helper thread's call not parented on the request:\n%s", dump(got))
	}
}

// A request whose headers arrive after its request line, in another
// segment (injection splits heads this way too), still continues the
// traceparent it carries.
func TestTraceparentAfterSplitHead(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startServer(t, "-mode=nethttp")
	client := holdClient(t, "-target="+addr, "-scenario=tpsplit")
	startWeft(t, rcv, "--pid="+strconv.Itoa(srv.Pid()))
	if out := client.Release(t); !strings.HasPrefix(out, "200 traceparent=1 ") {
		t.Fatalf("server saw %q", out)
	}
	got := waitSpans(t, rcv, 1, 30*time.Second, func(span) bool { return true })
	if len(got) != 1 || got[0].trace != "0af7651916cd43dd8448eb211c80319c" || got[0].parent != "b7ad6b7169203331" {
		t.Fatalf("the server span did not continue the traceparent of its second segment:\n%s", dump(got))
	}
}
