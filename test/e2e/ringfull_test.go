package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// A full ring buffer drops events. A connection's later events must not
// be read as if none had gone: on HTTP/2 the dropped header blocks changed
// the HPACK tables, on HTTP/1.1 a dropped response would pair the next
// one with the wrong request. Either way wrong paths, statuses or parents,
// worse than none. weft must resynchronise or cut such a connection
// (counted) and export only spans that are their own request's.
//
// weft is stopped (SIGSTOP) while traffic goes on, until the ring has
// overflowed for a second, then let go while the same connections go on. Request
// k asks for /req/(k mod paths), whose status and body size h2app derives
// from the path: a span decoded out of step shows. (HTTP/2: 500 paths,
// more than the HPACK tables hold; HTTP/1.1: 50, whose bodies are under
// 2 KiB, which Go's server sends with a Content-Length: the size of a
// chunked body whose end was not captured is an estimate.)
func TestRingFull(t *testing.T) {
	setup(t)
	t.Run("h2c", func(t *testing.T) {
		m, got := ringFullRun(t, "-mode=h2c-server", 500)
		// Both ends of the one connection went on after the loss: each
		// is cut at its next event, and nothing else is lost.
		if m["h2_conns"] != 2 || m["h2_conns_lost"] != 2 || m["h2_conns_cut"] == 0 {
			t.Errorf("h2 counters: conns %d, lost %d, cut %d (want 2, 2: both ends, and cut)",
				m["h2_conns"], m["h2_conns_lost"], m["h2_conns_cut"])
		}
		checkOwnRequests(t, got, 500)
	})
	t.Run("http1", func(t *testing.T) {
		m, got := ringFullRun(t, "-mode=h2c-server", 50, "-http1")
		// 32 connections, each with a request in flight most of the time.
		if m["requests_lost_gap"] == 0 {
			t.Errorf("no request counted lost in a gap")
		}
		checkOwnRequests(t, got, 50)
	})
	// A connection per request: the closes of some are dropped too, and
	// the kernel gives later sockets the addresses of those (the slab's
	// freed objects come back first).
	t.Run("http1-close", func(t *testing.T) {
		_, got := ringFullRun(t, "-mode=h2c-server", 50, "-http1", "-no-keepalive")
		checkOwnRequests(t, got, 50)
	})
	// The same over TLS (Go's crypto/tls hooks): the gaps are the
	// plaintext stream's.
	t.Run("h2-tls", func(t *testing.T) {
		m, got := ringFullRun(t, "-mode=https-server", 500, "-tls")
		if m["h2_conns"] != 2 || m["h2_conns_lost"] != 2 || m["h2_conns_cut"] == 0 {
			t.Errorf("h2 counters: conns %d, lost %d, cut %d (want 2, 2: both ends, and cut)",
				m["h2_conns"], m["h2_conns_lost"], m["h2_conns_cut"])
		}
		checkOwnRequests(t, got, 500)
	})
	t.Run("http1-tls", func(t *testing.T) {
		_, got := ringFullRun(t, "-mode=https-server", 50, "-http1", "-tls")
		checkOwnRequests(t, got, 50)
	})
}

// ringFullRun runs h2app's steady client against its server for 2 s,
// stops weft until the kernel has dropped events for a second, lets it go
// for 3 s more of traffic, and returns weft's counters and h2app's spans.
func ringFullRun(t *testing.T, serverMode string, paths int, clientArgs ...string) (map[string]uint64, []span) {
	rcv := otlptest.Start(t)
	srv, addr := startListener(t, exec.Command(bins.h2app, serverMode))
	cli := startGoClient(t, append([]string{"-mode=steady", "-addr=" + addr, "-for=2m", "-paths=" + strconv.Itoa(paths)}, clientArgs...)...)
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", srv.Pid(), cli.pid))
	cli.stdin.Write([]byte("go\n"))
	time.Sleep(2 * time.Second)
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	drops := weftMap(t, w.Pid(), "last_drop")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var ts uint64
		if err := drops.Lookup(uint32(0), &ts); err != nil {
			t.Fatal(err)
		}
		if ts != 0 {
			break
		}
		if time.Now().After(deadline) {
			w.cmd.Process.Signal(syscall.SIGCONT)
			t.Fatal("the ring buffer did not fill in a minute")
		}
	}
	time.Sleep(time.Second)
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	cli.stdin.Write([]byte("stop\n"))
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
	var got []span
	for _, s := range flatten(rcv.Spans()) {
		if s.service == "h2app" {
			got = append(got, s)
		}
	}
	t.Logf("%d requests, %d spans; events lost %d; h2 conns %d, lost %d, cut %d, streams lost %d; counted lost at a gap: %d",
		sent, len(got), m["events_lost_ringbuf"], m["h2_conns"], m["h2_conns_lost"], m["h2_conns_cut"], m["h2_streams_lost"],
		m["requests_lost_gap"])
	if m["events_lost_ringbuf"] == 0 {
		t.Fatalf("the ring buffer never filled: the test proves nothing")
	}
	if len(got) == 0 || len(got) >= 2*sent {
		t.Fatalf("%d spans of %d requests: want some, not all", len(got), sent)
	}
	return m, got
}

// weftMap opens the BPF map of that name that weft's process pid holds
// (its descriptors' fdinfo name the maps), not another test's.
func weftMap(t *testing.T, pid int, name string) *ebpf.Map {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	fds, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		info, err := os.ReadFile(filepath.Join(dir, fd.Name()))
		if err != nil {
			continue
		}
		_, rest, ok := strings.Cut(string(info), "map_id:")
		if !ok {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]), 10, 32)
		if err != nil {
			continue
		}
		m, err := ebpf.NewMapFromID(ebpf.MapID(id))
		if err != nil {
			continue
		}
		if mi, err := m.Info(); err == nil && mi.Name == name {
			t.Cleanup(func() { m.Close() })
			return m
		}
		m.Close()
	}
	t.Fatalf("weft (pid %d) holds no BPF map %s", pid, name)
	return nil
}

// checkOwnRequests checks that every span is its request's own: path,
// status, body size, the traceparent the client sent, and a server span's
// parent, when it is a client span, of the same path.
func checkOwnRequests(t *testing.T, got []span, paths int) {
	t.Helper()
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
		ok := err == nil && i >= 0 && i < paths && attrInt(s, "http.response.status_code") == h2Status(i) &&
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
