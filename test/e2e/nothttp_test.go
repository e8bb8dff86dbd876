package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Once weft finds a connection carries another protocol, the kernel stops
// copying its data: after the verdict, 100 echoed binary messages (a read
// and a write each on the traced server) are 200 calls counted in
// weft_events_skipped_not_http, no event is written, and every byte comes
// back as sent.
func TestNotHTTPStopsCopying(t *testing.T) {
	setup(t)
	script := filepath.Join(t.TempDir(), "echo.py")
	if err := os.WriteFile(script, []byte(`import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print("127.0.0.1:%d" % s.getsockname()[1], flush=True)
c, _ = s.accept()
while True:
    b = b""
    while len(b) < 64:
        got = c.recv(64 - len(b))
        if not got:
            raise SystemExit
        b += got
    c.sendall(b)
`), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, addr := startListener(t, exec.Command("python3", script))
	w := startWeft(t, nil, fmt.Sprintf("--pid=%d", srv.Pid()))

	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	msg := make([]byte, 64)
	for i := range msg {
		msg[i] = byte(0xff - i) // no start line in any of it
	}
	echo := func(n int) {
		t.Helper()
		got := make([]byte, 64)
		for i := 0; i < n; i++ {
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(r, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatalf("message %d came back as %x", i, got)
			}
		}
	}
	// Enough calls for the verdict (a connection that never shows a start
	// line is another protocol after 16 segments), then wait for it.
	echo(20)
	var before map[string]uint64
	deadline := time.Now().Add(10 * time.Second)
	for {
		before, err = w.Metrics()
		if err == nil && before["conns_not_http"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no not-HTTP verdict: %v %v", before, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	echo(100)
	after, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	if n := after["events_skipped_not_http"] - before["events_skipped_not_http"]; n != 200 {
		t.Errorf("%d calls skipped after the verdict, want 200 (100 reads, 100 writes)", n)
	}
	if n := after["kernel_events"] - before["kernel_events"]; n != 0 {
		t.Errorf("%d events written after the verdict, want 0", n)
	}
}
