package tracer

import (
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/testenv"
)

// A traceparent past the captured bytes of a request head read in one
// call is not seen: the server span starts its own trace and
// weft_traceparent_beyond_capture counts the head, once; one within them
// is honoured and counts nothing.
func TestTraceparentBeyondCaptureIsCounted(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{}) // 256 bytes captured

	pid, addr := headServer(t, tr)
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	send := func(head string) {
		t.Helper()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, head); err != nil { // one write: one segment
			t.Fatal(err)
		}
		if _, err := io.ReadAll(c); err != nil {
			t.Fatal(err)
		}
	}
	before, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("a", 400)
	send(fmt.Sprintf("GET /far HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\ntraceparent: %s\r\n\r\n", pad, parent))
	send(fmt.Sprintf("GET /near HTTP/1.1\r\nHost: x\r\ntraceparent: %s\r\nX-Pad: %s\r\n\r\n", parent, pad))

	parents := map[string]string{}
	for _, ev := range drainEvents(t, tr, 2*time.Second) {
		if ev.PID == pid && ev.Ctx == event.CtxServer {
			path := strings.Fields(string(ev.Payload))[1]
			parents[path] = fmt.Sprintf("%x", ev.ParentID)
		}
	}
	if p, ok := parents["/far"]; !ok || p != "0000000000000000" {
		t.Errorf("/far: server span parent %q (seen %v), want a root", p, ok)
	}
	if p := parents["/near"]; p != "00f067aa0ba902b7" {
		t.Errorf("/near: server span parent %q, want the traceparent's", p)
	}
	after, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if n := after.TraceparentUnseen - before.TraceparentUnseen; n != 1 {
		t.Errorf("traceparent_beyond_capture grew by %d, want 1 (the /far head)", n)
	}
}
