package e2e

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// A full ring buffer drops events. On an HTTP/2 connection a dropped
// event holds header blocks that change the HPACK tables, so the next
// ones would decode against the wrong table: wrong paths and statuses,
// worse than none. weft must cut such a connection (counted) and export
// only spans that are their own request's.
//
// weft is stopped (SIGSTOP) while h2c traffic goes on over one
// connection, long enough for the ring to overflow, then let go while the
// same connection goes on. Request k asks for /req/(k mod 500), whose
// status and body size h2app derives from the path: a span decoded
// against a table out of step shows.
func TestHTTP2RingFull(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startListener(t, exec.Command(bins.h2app, "-mode=h2c-server"))
	cli := startGoClient(t, "-mode=h2c-steady", "-addr="+addr, "-for=12s")
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", srv.Pid(), cli.pid))
	cli.stdin.Write([]byte("go\n"))
	time.Sleep(2 * time.Second)
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// At a few thousand requests a second, 8 MiB of events take about 2 s.
	time.Sleep(5 * time.Second)
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	cli.wait(t)
	sent, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(cli.stdout.Output()), "ok "))
	if err != nil {
		t.Fatalf("client: %s", cli.out.Output())
	}
	quiesce(rcv, 30*time.Second)

	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d requests; events lost %d; h2 conns %d, lost %d, cut %d, streams lost %d; spans server %d, client %d",
		sent, m["events_lost_ringbuf"], m["h2_conns"], m["h2_conns_lost"], m["h2_conns_cut"], m["h2_streams_lost"],
		m["spans_server"], m["spans_client"])
	if m["events_lost_ringbuf"] == 0 {
		t.Fatalf("the ring buffer never filled: the test proves nothing")
	}
	// Both ends of the one connection went on after the loss: each is
	// cut at its next event, and nothing else is lost.
	if m["h2_conns"] != 2 || m["h2_conns_lost"] != 2 || m["h2_conns_cut"] == 0 {
		t.Errorf("h2 counters: conns %d, lost %d, cut %d (want 2, 2: both ends, and cut)",
			m["h2_conns"], m["h2_conns_lost"], m["h2_conns_cut"])
	}

	var got []span
	for _, s := range flatten(rcv.Spans()) {
		if s.service == "h2app" {
			got = append(got, s)
		}
	}
	if len(got) == 0 || len(got) >= 2*sent {
		t.Fatalf("%d spans of %d requests: want some, not all", len(got), sent)
	}
	clients := map[string]span{}
	for _, s := range got {
		if s.kind == tracepb.Span_SPAN_KIND_CLIENT {
			clients[s.id] = s
		}
	}
	wrong := 0
	for _, s := range got {
		path := fmt.Sprint(s.attrs["url.path"])
		i, err := strconv.Atoi(strings.TrimPrefix(path, "/req/"))
		ok := err == nil && i >= 0 && i < 500 && attrInt(s, "http.response.status_code") == h2Status(i) &&
			attrInt(s, "http.response.body.size") == h2BodyLen(i)
		if ok && i%5 == 0 { // the client sent a traceparent
			ok = s.trace == fmt.Sprintf("%032x", 0xabc000+i) && s.parent == fmt.Sprintf("%016x", 0xdef000+i)
		}
		if c, linked := clients[s.parent]; ok && linked {
			ok = s.kind == tracepb.Span_SPAN_KIND_SERVER && c.attrs["url.path"] == s.attrs["url.path"]
		}
		if !ok {
			if wrong++; wrong <= 10 {
				t.Errorf("a span not its request's own: %s", s)
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d spans wrong", wrong, len(got))
	}
}
