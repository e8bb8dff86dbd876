package tracer

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/testenv"
)

// h2stream is a byte stream of HTTP/2 frames and what the kernel should
// copy of it: every frame header, the payloads of HEADERS, CONTINUATION,
// RST_STREAM, GOAWAY and PUSH_PROMISE, nothing of the others.
type h2stream struct{ wire, copied []byte }

func (s *h2stream) frame(typ, flags byte, stream uint32, payload []byte) *h2stream {
	h := []byte{byte(len(payload) >> 16), byte(len(payload) >> 8), byte(len(payload)), typ, flags}
	h = binary.BigEndian.AppendUint32(h, stream)
	s.wire = append(append(s.wire, h...), payload...)
	s.copied = append(s.copied, h...)
	switch typ {
	case 1, 3, 5, 7, 9:
		s.copied = append(s.copied, payload...)
	}
	return s
}

func filled(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }

// The kernel's copy of an HTTP/2 connection (bpf/include/h2walk.h): a
// server reads the client's frames in pieces that cut frame headers,
// header blocks and DATA payloads (each into two buffers), and answers
// with DATA frames larger than an event holds around its header blocks,
// from hundreds of 37-byte iovecs in one sendmsg; each
// direction's copies, joined, are the frames without the payloads user
// space does not decode, and the call that carried the preface keeps it.
func TestH2FramesCopied(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{}) // 256 bytes captured: less than most calls here

	req := &h2stream{wire: []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), copied: []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")}
	req.frame(4, 0, 0, filled(12, 0)).
		frame(1, 0x4, 1, filled(40, 'h')).
		frame(0, 0x1, 1, filled(5000, 'd')).
		frame(1, 0x0, 3, filled(300, 'H')).
		frame(9, 0x4, 3, filled(100, 'c')).
		frame(8, 0, 0, filled(4, 0)).
		frame(3, 0, 3, filled(4, 0))
	resp := &h2stream{}
	resp.frame(4, 0, 0, nil).
		frame(1, 0x4, 1, filled(30, 'r')).
		frame(0, 0, 1, filled(9000, 'D')).
		frame(0, 0, 1, filled(3000, 'E')).
		frame(1, 0x5, 1, filled(20, 't')).
		frame(7, 0, 0, filled(8, 0))
	// The server reads in pieces of these sizes, then sends its answer.
	pieces := []int{14, 10, 30, 7, 100, 4000, 1003, 9, 250, 1} // the preface in two, as Go reads it
	sum := 0
	for _, n := range pieces {
		sum += n
	}
	pieces = append(pieces, len(req.wire)-sum)
	srv, _, stdout := tracedPython(t, tr, `import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
c, _ = s.accept()
for n in sys.argv[2].split(","):
    n = int(n)
    while n > 0:  # into two buffers: recvmsg's iovecs
        a, b = bytearray(max(1, n // 2)), bytearray(max(1, n - n // 2))
        n -= c.recvmsg_into([a, b] if n > 1 else [a])[0]
out = bytes.fromhex(sys.argv[1])
while out:  # from iovecs of 37 bytes: sendmsg's iovecs cut frames anywhere
    out = out[c.sendmsg([out[i:i + 37] for i in range(0, min(len(out), 37 * 1000), 37)]):]
c.recv(1)
c.close()
`, hex.EncodeToString(resp.wire), strings.Trim(strings.Join(strings.Fields(fmt.Sprint(pieces)), ","), "[]"))
	port, err := stdout.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strings.TrimSpace(port), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req.wire); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, make([]byte, len(resp.wire))); err != nil {
		t.Fatal(err)
	}
	c.Close()

	var in, out []byte
	calls := 0
	for _, ev := range drainEvents(t, tr, time.Second) {
		if ev.Kind != event.KindData || ev.PID != uint32(srv.Process.Pid) {
			continue
		}
		calls++
		if ev.Capture != event.CaptureH2 {
			t.Fatalf("call %d (%v, %d bytes): capture %d, want HTTP/2 frames", calls, ev.Dir, ev.Bytes, ev.Capture)
		}
		if ev.Dir == event.Ingress {
			in = append(in, ev.Payload...)
		} else {
			out = append(out, ev.Payload...)
		}
	}
	if !bytes.Equal(in, req.copied) {
		t.Errorf("requests: copied %d bytes, want %d:\n%x\nwant\n%x", len(in), len(req.copied), in, req.copied)
	}
	if !bytes.Equal(out, resp.copied) {
		t.Errorf("responses: copied %d bytes, want %d:\n%x\nwant\n%x", len(out), len(resp.copied), out, resp.copied)
	}
}
