package e2e

import (
	"crypto/tls"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// load sends n GETs at the given concurrency from this (untraced) process.
func load(t *testing.T, url string, n, concurrency int) {
	t.Helper()
	loadEach(t, func(int64) string { return url }, n, concurrency)
}

// loadEach sends GET urlOf(i) for i = 1..n at the given concurrency from
// this (untraced) process, and fails the test if any request fails.
func loadEach(t *testing.T, urlOf func(i int64) string, n, concurrency int) {
	t.Helper()
	loadRequests(t, func(i int64) *http.Request {
		req, err := http.NewRequest(http.MethodGet, urlOf(i), nil)
		if err != nil {
			panic(err) // the test's own URLs
		}
		return req
	}, n, concurrency)
}

// loadRequests sends reqOf(i) for i = 1..n at the given concurrency from
// this (untraced) process, and fails the test if any request fails.
func loadRequests(t *testing.T, reqOf func(i int64) *http.Request, n, concurrency int) {
	t.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: concurrency, MaxConnsPerHost: concurrency,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} // the tests' self-signed servers
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				resp, err := client.Do(reqOf(i))
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, resp.Status+": "+string(b))
				}
			}
		}()
	}
	wg.Wait()
	if f := failed.Load(); f > 0 {
		t.Fatalf("%d of %d requests failed, first: %v", f, n, firstErr.Load())
	}
}

// Every request yields a server span, or the shortfall is exactly what weft
// reports as lost: nothing vanishes silently.
func TestTenThousandRequests(t *testing.T) {
	setup(t)
	rcv := otlptest.Start(t)
	srv, addr := startServer(t, "-mode=nethttp")
	w := startWeft(t, rcv, "--pid="+strconv.Itoa(srv.Pid()))

	const n = 10000
	start := time.Now()
	load(t, "http://"+addr+"/hello", n, 50)
	t.Logf("%d requests in %v", n, time.Since(start))

	keep := func(s span) bool { return s.service == "websrv" }
	deadline := time.Now().Add(60 * time.Second)
	var spans int
	var m map[string]uint64
	for {
		spans = 0
		for _, s := range flatten(rcv.Spans()) {
			if keep(s) {
				spans++
			}
		}
		var err error
		m, err = w.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if spans >= n || time.Now().After(deadline) {
			break
		}
		// Settled: everything weft built was exported and nothing is pending.
		if m["spans_server"] == m["spans_exported"]+m["spans_dropped"]+m["spans_failed"] && m["spans_server"] > 0 &&
			uint64(spans) == m["spans_exported"] && m["export_queue"] == 0 && time.Since(start) > 10*time.Second {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	lost := m["events_lost"] + m["spans_dropped"] + m["spans_failed"] + m["requests_timed_out"] + m["requests_unanswered"] + m["parse_errors"]
	t.Logf("spans %d, metrics %v", spans, m)
	if spans > n {
		t.Fatalf("%d spans for %d requests", spans, n)
	}
	if short := uint64(n - spans); short > 0 && short > lost {
		t.Fatalf("%d requests gave %d spans: %d missing but only %d reported lost (%v)", n, spans, short, lost, m)
	}
	if spans < n && lost == 0 {
		t.Fatalf("spans missing with nothing reported lost")
	}
	if m["spans_server"] < uint64(spans) {
		t.Fatalf("metrics disagree: %v", m)
	}
}
