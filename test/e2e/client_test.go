package e2e

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// curl, selected by executable after weft started, yields CLIENT spans.
// Selection by executable acts on the exec event, asynchronously: the
// first moments of a new process can pass before it is traced, so curl
// spaces its requests and the test asks for all but the first.
func TestCurlClientSpansBySelectedExe(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	_, addr := startServer(t, "-mode=nethttp")
	startWeft(t, rcv, `--exe=(^|/)curl$`)

	const n = 6
	args := []string{"-sS", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "-o", "/dev/null", "--rate", "5/s"}
	for i := range n {
		args = append(args, fmt.Sprintf("http://%s/status/%d", addr, 200+i))
	}
	if out, err := exec.Command("curl", args...).CombinedOutput(); err != nil {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	got := waitSpans(t, rcv, n-1, 20*time.Second, func(s span) bool { return s.service == "curl" })
	if len(got) > n {
		t.Fatalf("%d requests gave %d spans:\n%s", n, len(got), dump(got))
	}
	host, port, _ := strings.Cut(addr, ":")
	for _, s := range got {
		code := attrInt(s, "http.response.status_code")
		if s.kind != tracepb.Span_SPAN_KIND_CLIENT || code < 200 || code >= 200+n {
			t.Errorf("span %s", s)
		}
		if s.attrs["url.full"] != fmt.Sprintf("http://%s/status/%d", addr, code) ||
			s.attrs["server.address"] != host || fmt.Sprint(s.attrs["server.port"]) != port ||
			s.attrs["http.request.method"] != "GET" || !strings.HasPrefix(fmt.Sprint(s.attrs["user_agent.original"]), "curl/") {
			t.Errorf("client attributes: %s", s)
		}
		if s.parent != "" {
			t.Errorf("a request from an untraced-server process has a parent: %s", s)
		}
	}
}
