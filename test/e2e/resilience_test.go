package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// The OTLP backend is down for a minute, then comes back: weft keeps
// running in bounded memory, counts what it dropped, and exports again.
func TestBackendDownThenBack(t *testing.T) {
	setup(t)
	rcv := otlptest.New(t) // reserved endpoint, nothing listening yet
	srv, addr := startServer(t, "-mode=nethttp")
	w := startWeft(t, rcv, "--pid="+strconv.Itoa(srv.Pid()))

	url := "http://" + addr + "/hello"
	var peakRSS uint64
	down := time.Now()
	for time.Since(down) < time.Minute {
		load(t, url, 2000, 20)
		if rss := rssKB(t, w.Pid()); rss > peakRSS {
			peakRSS = rss
		}
		if !w.Alive() {
			t.Fatalf("weft died while the backend was down:\n%s", w.Output())
		}
		time.Sleep(2 * time.Second)
	}
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after a minute down: peak RSS %d KiB, metrics %v", peakRSS, m)
	if m["spans_dropped"]+m["spans_failed"] == 0 {
		t.Fatalf("nothing counted as dropped or failed while the backend was down: %v", m)
	}
	if m["spans_exported"] != 0 {
		t.Fatalf("spans counted as exported with no backend: %v", m)
	}
	if peakRSS > 256<<10 {
		t.Errorf("weft grew to %d KiB while the backend was down", peakRSS)
	}

	rcv.Start(t)
	load(t, url, 200, 4)
	deadline := time.Now().Add(60 * time.Second)
	for len(rcv.Spans()) == 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
	}
	if len(rcv.Spans()) == 0 {
		m, _ := w.Metrics()
		t.Fatalf("no spans exported after the backend came back: %v\n%s", m, w.Output())
	}
}

func rssKB(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// Bad input: binary garbage, a half-sent request line, a 64 KiB header
// block, a connection closed mid-response. weft survives, counts parse
// errors, and still traces the next good request.
func TestBadInput(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startServer(t, "-mode=nethttp")
	w := startWeft(t, rcv, "--pid="+strconv.Itoa(srv.Pid()))

	send := func(payload []byte, closeWrite bool) {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		c.Write(payload)
		if closeWrite {
			c.(*net.TCPConn).CloseWrite()
		}
		io.Copy(io.Discard, c)
	}
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*7 + i/13)
	}
	send(garbage, true)
	send([]byte("GET /hal"), true)
	big := "GET /hello HTTP/1.1\r\nHost: x\r\n" + strings.Repeat("X-Filler: "+strings.Repeat("a", 1000)+"\r\n", 64) + "\r\n"
	send([]byte(big), true)

	// Closed mid-response: ask for a large body and hang up after the head.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /big?bytes=50000000 HTTP/1.1\r\nHost: x\r\n\r\n")
	buf := make([]byte, 4096)
	c.Read(buf)
	c.Close()

	get(t, "http://"+addr+"/hello?after=bad")
	got := waitSpans(t, rcv, 1, 20*time.Second, func(s span) bool {
		return s.service == "websrv" && s.attrs["url.path"] == "/hello" && s.attrs["user_agent.original"] != nil
	})
	if len(got) != 1 || got[0].err {
		t.Fatalf("the good request after bad input: %s", dump(got))
	}
	// The aborted download ends as an error span, not a stuck request.
	big2 := waitSpans(t, rcv, 1, 20*time.Second, func(s span) bool { return s.attrs["url.path"] == "/big" })
	if !big2[0].err {
		t.Errorf("response cut by the client's close not marked as error: %s", big2[0])
	}
	if !w.Alive() {
		t.Fatalf("weft died:\n%s", w.Output())
	}
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("metrics %v", m)
	if m["parse_errors"]+m["conns_not_http"] == 0 {
		t.Errorf("bad input left no trace in parse_errors or conns_not_http: %v", m)
	}
}
