package tracer

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/event"
)

// tracedPython starts a Python script, traced by tr before its first
// statement, and returns it with its standard input and output; it is
// killed when the test ends.
func tracedPython(t *testing.T, tr *Tracer, script string, args ...string) (*exec.Cmd, io.Writer, *bufio.Reader) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "script.py")
	gate := "import os as _gate_os, sys as _gate_sys\n" +
		"_gate_sys.stdout.write(\"ready\\n\"); _gate_sys.stdout.flush(); _gate_os.read(0, 3)\n"
	if err := os.WriteFile(path, []byte(gate+script), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(pythonPath(t), append([]string{path}, args...)...)
	stdin, stdout := startTraced(t, tr, cmd)
	return cmd, stdin, stdout
}

// startTraced starts cmd, whose program prints "ready" once it runs and
// then reads "go\n" before it does anything else, and traces it in
// between. Traced at once, it could lose its correlation to its own exec:
// Start returns when the exec closes the descriptors, before the exec
// tracepoint, at which weft_exec drops the process's mode for user space
// to classify it again, as the agent does at the exec event; nothing here
// reads events. The process is killed when the test ends.
func startTraced(t *testing.T, tr *Tracer, cmd *exec.Cmd) (io.Writer, *bufio.Reader) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("%s did not start: %q %v", cmd.Path, line, err)
	}
	if err := tr.SetPID(uint32(cmd.Process.Pid), true); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	return stdin, out
}

// drainEvents reads the events tr has until none came for quiet, their
// payloads copied.
func drainEvents(t *testing.T, tr *Tracer, quiet time.Duration) []event.Event {
	t.Helper()
	defer tr.SetDeadline(time.Time{})
	var out []event.Event
	for {
		tr.SetDeadline(time.Now().Add(quiet))
		var ev event.Event
		err := tr.Read(&ev)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		ev.Payload = append([]byte(nil), ev.Payload...)
		out = append(out, ev)
	}
}

// headServer starts a Python server, traced by tr, that answers each
// connection once it has read a request head, and returns its pid and
// address.
func headServer(t *testing.T, tr *Tracer) (uint32, string) {
	t.Helper()
	srv, _, stdout := tracedPython(t, tr, `import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    head = b""
    while b"\r\n\r\n" not in head:
        head += c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    c.close()
`)
	port, err := stdout.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return uint32(srv.Process.Pid), "127.0.0.1:" + strings.TrimSpace(port)
}
