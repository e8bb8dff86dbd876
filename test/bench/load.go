package main

import (
	"crypto/tls"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// h2Scheme before a URL's https:// asks openLoop for HTTP/2 (by ALPN).
const h2Scheme = "h2+"

// openLoop sends rate requests per second for d, whatever the server's
// pace (an open-loop load: a slow server is not offered less work).
// Latency counts from when a request was due, so queueing shows.
func openLoop(url string, rate int, d time.Duration, workers int) wrkResult {
	tr := &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers,
		// HTTPS to the benchmarks' self-signed servers, over HTTP/1.1.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	if h2, ok := strings.CutPrefix(url, h2Scheme); ok {
		// Streams at once on one connection (as many as workers).
		url, tr.TLSNextProto, tr.ForceAttemptHTTP2 = h2, nil, true
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	due := make(chan time.Time, rate)
	var mu sync.Mutex
	lat := make([]time.Duration, 0, int(float64(rate)*d.Seconds()))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1024)
			for t := range due {
				resp, err := client.Get(url)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					local = append(local, time.Since(t))
				}
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	start := time.Now()
	interval := time.Second / time.Duration(rate)
	for next := start; time.Since(start) < d; next = next.Add(interval) {
		if w := time.Until(next); w > 0 {
			time.Sleep(w)
		}
		due <- next
	}
	close(due)
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	r := wrkResult{requests: float64(len(lat)), rps: float64(len(lat)) / elapsed.Seconds(), lat: lat}
	if n := len(lat); n > 0 {
		r.p50, r.p99 = lat[n/2], lat[n*99/100]
	}
	return r
}
