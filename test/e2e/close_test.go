package e2e

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// cutClient is a traced Python client that, once told on stdin, reads only
// the status of /unread (closing with the body unread, as urlopen's users
// who need the status do), the same of /late-fin after the server sent its
// body and closed, and all it can of /cut, whose server closes before the
// declared body is sent.
const cutClient = `
import http.client, sys, time, urllib.request
sys.stdin.readline()
base = sys.argv[1]
with urllib.request.urlopen(base + "/unread", timeout=10) as r:
    status = r.status
with urllib.request.urlopen(base + "/late-fin", timeout=10) as r:
    time.sleep(0.2)  # the body and the server's FIN arrive, unread
try:
    with urllib.request.urlopen(base + "/cut", timeout=10) as r:
        r.read()
except http.client.IncompleteRead:
    print("incomplete", flush=True)
print("done", status, flush=True)
`

// serveCuts answers /unread with a head, then its body only later, and
// waits for the client to close first; /late-fin with a head, its body a
// little later, then closes; /cut with a head declaring 50 bytes and 3 of
// them, then closes.
func serveCuts(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				switch req.URL.Path {
				case "/unread":
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n")
					time.Sleep(50 * time.Millisecond)
					io.WriteString(c, "hello")
					io.Copy(io.Discard, c) // the client closes first
				case "/late-fin":
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n")
					time.Sleep(50 * time.Millisecond)
					io.WriteString(c, "hello")
				case "/cut":
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\nConnection: close\r\n\r\nabc")
				}
			}(c)
		}
	}()
	return "http://" + ln.Addr().String()
}

// Who ended the connection decides what a response cut short means: the
// client that stopped reading chose to (no error, no parse error), be it
// the first to close (/unread) or not (/late-fin: the bytes it left unread
// say so); the server that closed early sent a truncated response
// (error.type response_incomplete).
func TestResponseCutByClose(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	base := serveCuts(t)
	cmd := exec.Command("python3", "-c", cutClient, base)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p, p
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	w := startWeft(t, rcv, "--pid="+strconv.Itoa(cmd.Process.Pid))
	io.WriteString(stdin, "go\n")
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("client did not finish: %s", p.Output())
	}
	if out := p.Output(); !strings.Contains(out, "incomplete") || !strings.Contains(out, "done 200") {
		t.Fatalf("client said %q", out)
	}
	got := waitSpans(t, rcv, 3, 30*time.Second, func(s span) bool { return s.kind == tracepb.Span_SPAN_KIND_CLIENT })
	want := map[string]string{"/unread": "", "/late-fin": "", "/cut": "response_incomplete"}
	for _, s := range got {
		path, _ := s.attrs["url.path"].(string)
		et, _ := s.attrs["error.type"].(string)
		wantET, ok := want[path]
		if !ok || et != wantET || attrInt(s, "http.response.status_code") != 200 || s.err != (wantET != "") {
			t.Errorf("span %s: want status 200 and error.type %q", s, wantET)
		}
		delete(want, path)
	}
	if len(want) != 0 {
		t.Errorf("no span for %v:\n%s", want, dump(got))
	}
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if m["parse_errors"] != 1 || m["parse_errors_incomplete"] != 1 {
		t.Errorf("parse errors %d (incomplete %d), want the one of /cut", m["parse_errors"], m["parse_errors_incomplete"])
	}
}
