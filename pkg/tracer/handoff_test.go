package tracer

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/testenv"
)

// A request read by one thread and answered by another (as when Go moves
// a goroutine between threads): once the response leaves, the reading
// thread serves nothing any more. Its later samples carry no span and its
// traces_ctx_v1 entry is gone.
func TestResponseFromAnotherThreadEndsTheReadersSpan(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{})

	srv, _, stdout := tracedPython(t, tr, `import socket, threading, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
def respond(c):
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    c.close()
while True:
    c, _ = s.accept()
    c.recv(65536)                  # the main thread reads the request
    w = threading.Thread(target=respond, args=(c,))
    w.start()
    w.join()                       # another thread answers it
    end = time.thread_time() + 1.5 # then the main thread works for no request
    while time.thread_time() < end:
        pass
`)
	pid := uint32(srv.Process.Pid)
	port, err := stdout.ReadString('\n')
	if err != nil {
		t.Fatalf("server port: %v", err)
	}
	s, err := tr.StartSampling(SamplingOptions{Frequency: 99})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strings.TrimSpace(port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "GET /handoff HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c); err != nil {
		t.Fatal(err)
	}
	// The main thread may be sampled in the span before the response
	// (starting the responder thread): judge only what follows it.
	answered := monotonicNow(t)
	c.Close()
	time.Sleep(50 * time.Millisecond)
	if v, ok, err := tr.TracesCtx(pid, pid); err != nil || ok {
		t.Errorf("the reading thread's traces_ctx_v1 entry outlived the response: %x (err %v)", v.SpanID, err)
	}
	samples := collect(t, s, time.Second)
	main, inSpan := 0, 0
	for _, smp := range samples {
		if smp.TID != pid || smp.Time < answered {
			continue
		}
		main++
		if smp.InSpan() {
			inSpan++
		}
	}
	t.Logf("%d samples of the main thread after the response, %d in a span", main, inSpan)
	if main < 10 { // a second at 99 Hz, on a loaded machine
		t.Errorf("%d samples of a second of spinning at 99 Hz", main)
	}
	if inSpan != 0 {
		t.Errorf("%d samples after the response still carry the request's span", inSpan)
	}
}
