package tracer

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/testenv"
)

// A full socket table counts every call it could not note, and drops no
// socket it holds: with room for 4, a client that sends a request on 10
// connections, reads each answer and closes them all gets 12 counted
// (6 sends, 6 reads) and the closes of its first 4 connections exactly.
func TestSocketTableFullIsCounted(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{SocketTableSize: 4})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if line == "\r\n" {
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					}
				}
			}()
		}
	}()

	cmd, stdin, stdout := tracedPython(t, tr, `import socket, sys
port = int(sys.argv[1])
sys.stdin.readline()
conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]
for c in conns:
    c.sendall(b"GET /t HTTP/1.1\r\nHost: x\r\n\r\n")
for c in conns:
    got = b""
    while not got.endswith(b"ok"):
        got += c.recv(100)
for c in conns:
    c.close()
print("done", flush=True)
`, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	io.WriteString(stdin, "go\n")
	if line, err := stdout.ReadString('\n'); err != nil || strings.TrimSpace(line) != "done" {
		t.Fatalf("client: %q %v", line, err)
	}

	data := map[uint64]int{}
	closed := map[uint64]bool{}
	for _, ev := range drainEvents(t, tr, 2*time.Second) {
		if ev.PID != uint32(cmd.Process.Pid) && ev.Kind == event.KindData {
			continue
		}
		switch ev.Kind {
		case event.KindData:
			data[ev.ConnID]++
		case event.KindClose:
			closed[ev.ConnID] = true
		}
	}
	if len(data) != 10 {
		t.Errorf("data events on %d connections, want 10", len(data))
	}
	held := 0
	for id := range closed {
		if data[id] == 0 {
			t.Errorf("close of a connection with no data event: %x", id)
		}
		held++
	}
	if held != 4 {
		t.Errorf("closes of %d connections reported, want the 4 the table held", held)
	}
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.SockTableFull != 12 {
		t.Errorf("socket_table_full = %d, want 12 (6 sends and 6 reads on connections the table had no room for)", st.SockTableFull)
	}
}
