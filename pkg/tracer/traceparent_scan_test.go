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

// The kernel's search for a traceparent header (tracectx.h), which looks
// eight bytes at a time for line feeds, finds it at every offset and in
// every spelling HTTP allows, in a head read whole or continued in a
// later read, and nowhere else: not in a body, not as part of another
// header's name. Each request has its own parent span id, so a span that
// took another request's parent shows.
func TestTraceparentFoundWhereverItIs(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{CaptureBytes: 512})
	pid, addr := headServer(t, tr)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	type request struct {
		path   string
		parts  []string // written one after the other, each read on its own
		parent string   // the span id it must continue, "" for a root
	}
	var reqs []request
	add := func(parent bool, parts ...string) {
		i := len(reqs)
		path := fmt.Sprintf("/r/%d", i)
		p := fmt.Sprintf("%016x", i+1)
		for k := range parts {
			parts[k] = strings.NewReplacer("{path}", path, "{tp}", "00-"+traceID+"-"+p+"-01").Replace(parts[k])
		}
		if !parent {
			p = ""
		}
		reqs = append(reqs, request{path, parts, p})
	}
	// Every alignment of the header's line feed against the eight-byte
	// words, with and without the optional space.
	for pad := 0; pad < 16; pad++ {
		x := strings.Repeat("x", pad)
		add(true, "GET {path} HTTP/1.1\r\nHost: h\r\nX-Pad: "+x+"\r\ntraceparent: {tp}\r\nAccept: */*\r\n\r\n")
		add(true, "GET {path} HTTP/1.1\r\nX-Pad: "+x+"\r\nTraceparent:{tp}\r\n\r\n")
	}
	add(true, "GET {path} HTTP/1.1\r\nTRACEPARENT:\t{tp}\r\n\r\n")                                 // first header
	add(true, "POST {path} HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\ntraceparent: {tp}\r\n\r\n") // last header
	add(false, "GET {path} HTTP/1.1\r\nHost: h\r\n\r\n")
	add(false, "GET {path} HTTP/1.1\r\nx-traceparent: {tp}\r\n\r\n")
	add(false, "POST {path} HTTP/1.1\r\nContent-Length: 70\r\n\r\ntraceparent: {tp}\r\n")
	add(false, "GET {path} HTTP/1.1\r\ntraceparent: 00-short\r\n\r\n")
	// Continued heads, in two or three reads: cut at the header's line
	// start, inside the line before it, between CR and LF, and inside the
	// blank line before a body that holds one.
	add(true, "GET {path} HTTP/1.1\r\nHost: h\r\n", "traceparent: {tp}\r\n\r\n")
	add(true, "GET {path} HTTP/1.1\r\nHost: h\r\nX-A: 12", "34\r\ntraceparent: {tp}\r\n\r\n")
	add(true, "GET {path} HTTP/1.1\r\nHost: h\r", "\ntraceparent: {tp}\r\n\r\n")
	add(true, "GET {path} HTTP/1.1\r\nHost: h\r", "\n", "traceparent: {tp}\r\n\r\n")
	add(false, "POST {path} HTTP/1.1\r\nContent-Length: 70\r\n\r", "\ntraceparent: {tp}\r\n")
	add(false, "POST {path} HTTP/1.1\r\nContent-Length: 70\r\n", "\r\ntraceparent: {tp}\r\n")
	add(false, "POST {path} HTTP/1.1\r\nContent-Length: 71\r\n", "\r", "\ntraceparent: {tp}\r\n")

	for _, r := range reqs {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		for k, p := range r.parts {
			if k > 0 {
				time.Sleep(100 * time.Millisecond) // the server reads the part before on its own
			}
			if _, err := io.WriteString(c, p); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := io.ReadAll(c); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}

	// A socket's address is reused by later connections: a continuation
	// belongs to the last request start read on its socket before it.
	type seen struct{ trace, parent string }
	bySock := map[uint64]string{}
	got := map[string]seen{}
	for _, ev := range drainEvents(t, tr, 2*time.Second) {
		if ev.PID != pid {
			continue
		}
		path := bySock[ev.ConnID]
		switch ev.Ctx {
		case event.CtxServer:
			path = strings.Fields(string(ev.Payload))[1]
			bySock[ev.ConnID] = path
		case event.CtxServerCont:
		default:
			continue
		}
		got[path] = seen{fmt.Sprintf("%x", ev.TraceID), fmt.Sprintf("%x", ev.ParentID)}
	}
	for _, r := range reqs {
		s, ok := got[r.path]
		switch {
		case !ok:
			t.Errorf("%s %q: no server span", r.path, r.parts)
		case r.parent == "" && (s.parent != "0000000000000000" || s.trace == traceID):
			t.Errorf("%s %q: trace %s parent %s, want a root", r.path, r.parts, s.trace, s.parent)
		case r.parent != "" && (s.parent != r.parent || s.trace != traceID):
			t.Errorf("%s %q: trace %s parent %s, want %s under %s", r.path, r.parts, s.trace, s.parent, traceID, r.parent)
		}
	}
}
