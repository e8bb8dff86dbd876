package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"
)

// shape is the trace tree one request should make.
type shape int

const (
	// shapeWhole: one trace, the front's SERVER span at the root, under it
	// one CLIENT span per backend call, each with the backend's SERVER span
	// under it.
	shapeWhole shape = iota
	// shapeSplit: the front's SERVER span alone, and every backend call a
	// trace of its own (CLIENT, then the backend's SERVER): what a request
	// whose call leaves the thread that read it gives without the agent.
	shapeSplit
	// shapeSingle: one SERVER span (the backend asked directly).
	shapeSingle
)

// endpoint is one group of requests to one path of one service.
type endpoint struct {
	service string // OTEL_SERVICE_NAME of the service asked
	port    int
	path    string
	calls   int   // backend calls each request makes
	want    shape // the trace each request should make
	// assert: -check fails when the traces differ from want; otherwise the
	// traces are only shown.
	assert bool
	// burst > 0: that many requests at once, n of them in all, instead of
	// sequential ones; shown as a summary line only.
	burst, n int
	burn     string // the hot function the slowest span's flame graph must show
	note     string // what the endpoint does, printed above its trace
}

func (e endpoint) url() string { return fmt.Sprintf("http://127.0.0.1:%d%s", e.port, e.path) }

func (e endpoint) title() string {
	t := e.service + " " + e.path
	if e.burst > 0 {
		t += fmt.Sprintf(" ×%d, %d at a time", e.n, e.burst)
	}
	return t
}

// endpoints is the demo's traffic, in the order it is sent and printed.
func endpoints(p ports) []endpoint {
	const (
		fe = "frontend"
		na = "frontend-noagent"
	)
	return []endpoint{
		{service: fe, port: p.frontend, path: "/direct", calls: 1, assert: true,
			note: "Ktor: the backend call from the handler's coroutine"},
		{service: fe, port: p.frontend, path: "/hop", calls: 1, assert: true,
			note: "Ktor: delay(), then the call on Dispatchers.IO"},
		{service: fe, port: p.frontend, path: "/parallel", calls: 2, assert: true,
			note: "Ktor: two async calls at once"},
		{service: fe, port: p.frontend, path: "/shared", calls: 1, assert: true,
			note: "Ktor: handed to one long-lived worker coroutine through a Channel"},
		{service: fe, port: p.frontend, path: "/shared", calls: 1, assert: true, burst: 4, n: 12,
			note: "concurrent jobs: each backend call must land under its own request"},
		{service: fe, port: p.frontend, path: "/cpu", calls: 1, assert: true, burn: "burnCpuFrontendHotLoop",
			note: "Ktor: ~200 ms of CPU in burnCpuFrontendHotLoop, then a call"},
		{service: na, port: p.noagent, path: "/direct", calls: 1, want: shapeSplit, assert: true,
			note: "the same jar WITHOUT the agent: the coroutine's call starts a trace of its own"},
		{service: na, port: p.noagent, path: "/hop", calls: 1, want: shapeSplit, assert: true, note: "without the agent"},
		{service: na, port: p.noagent, path: "/parallel", calls: 2, want: shapeSplit, assert: true, note: "without the agent"},
		{service: na, port: p.noagent, path: "/shared", calls: 1, want: shapeSplit, assert: true, note: "without the agent"},
		{service: na, port: p.noagent, path: "/cpu", calls: 1, want: shapeSplit, assert: true,
			note: "without the agent: the burn runs on a coroutine thread, outside the request's span"},
		{service: "jfront", port: p.jfront, path: "/call", calls: 1, assert: true,
			note: "plain Java, thread per request, no agent needed: the call runs on the request's thread"},
		{service: "jfront", port: p.jfront, path: "/cpu", calls: 1, assert: true, burn: "burnCpuJfrontHotLoop",
			note: "plain Java: ~200 ms of CPU in burnCpuJfrontHotLoop, then a call"},
		{service: "backend", port: p.backend, path: "/work", want: shapeSingle, assert: true,
			note: "the backend asked directly"},
	}
}

// request is one request the demo sent.
type request struct {
	ua         string // its User-Agent, which finds its SERVER span again
	start, end time.Time
	status     int
}

// group is an endpoint's requests.
type group struct {
	ep   endpoint
	reqs []request
}

// window is the time the group's requests took, with a margin for the
// clocks of weft and of the runner.
func (g group) window() (time.Time, time.Time) {
	from, to := g.reqs[0].start, g.reqs[0].end
	for _, r := range g.reqs {
		if r.start.Before(from) {
			from = r.start
		}
		if r.end.After(to) {
			to = r.end
		}
	}
	return from.Add(-windowMargin), to.Add(windowMargin)
}

const (
	windowMargin = 50 * time.Millisecond
	// groupGap keeps the groups' windows apart, so that a trace in one
	// group's window belongs to it.
	groupGap = 400 * time.Millisecond
	// requestGap keeps the sequential requests of a group apart, so that a
	// split trace can be told to the request it came from.
	requestGap = 150 * time.Millisecond
)

// client sends the demo's requests: one connection each, so that a request
// is never queued behind another one on a kept-alive connection.
var client = &http.Client{
	Timeout:   20 * time.Second,
	Transport: &http.Transport{DisableKeepAlives: true},
}

// send makes one GET with the given User-Agent.
func send(ctx context.Context, url, ua string) (request, error) {
	r := request{ua: ua}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return r, fmt.Errorf("GET %s: %w", url, err)
	}
	req.Header.Set("User-Agent", ua)
	r.start = time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return r, fmt.Errorf("GET %s: %w", url, err)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.end = time.Now()
	r.status = resp.StatusCode
	if err != nil {
		return r, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return r, nil
}

// drive sends every endpoint's requests, group after group.
func drive(ctx context.Context, eps []endpoint, perEndpoint int, runID string) ([]group, error) {
	var groups []group
	for _, ep := range eps {
		g := group{ep: ep}
		ua := func(i int) string { return fmt.Sprintf("weft-demo/%s %s%s #%d", runID, ep.service, ep.path, i+1) }
		if ep.burst > 0 {
			reqs, err := burst(ctx, ep, ua)
			if err != nil {
				return nil, err
			}
			g.reqs = reqs
		} else {
			for i := range perEndpoint {
				r, err := send(ctx, ep.url(), ua(i))
				if err != nil {
					return nil, err
				}
				g.reqs = append(g.reqs, r)
				if err := sleep(ctx, requestGap); err != nil {
					return nil, err
				}
			}
		}
		groups = append(groups, g)
		if err := sleep(ctx, groupGap); err != nil {
			return nil, err
		}
	}
	return groups, nil
}

// burst sends ep.n requests from ep.burst concurrent clients.
func burst(ctx context.Context, ep endpoint, ua func(int) string) ([]request, error) {
	reqs := make([]request, ep.n)
	errs := make([]error, ep.n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range ep.burst {
		wg.Go(func() {
			for i := range next {
				reqs[i], errs[i] = send(ctx, ep.url(), ua(i))
			}
		})
	}
	for i := range ep.n {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return reqs, nil
}

// warmUp drives every endpoint a few times (class loading, JIT, pools,
// connections made while weft watches). With perfMaps, it then drives /cpu
// until the JVM's perf map names the burn loop: weft has the JVM write the
// map when samples land in JIT code it cannot name, and a flame graph
// shows the loop only once it is compiled and named.
func warmUp(ctx context.Context, eps []endpoint, pids map[string]int, perfMaps bool, deadline time.Duration) error {
	for _, ep := range eps {
		if ep.burst > 0 {
			continue
		}
		for range 3 {
			if _, err := send(ctx, ep.url(), "weft-demo warm-up"); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	end := time.Now().Add(deadline)
	for _, ep := range eps {
		fn := burnFunction(ep)
		if fn == "" || !perfMaps {
			continue
		}
		perfMap := fmt.Sprintf("/tmp/perf-%d.map", pids[ep.service])
		for n := 1; ; n++ {
			if _, err := send(ctx, ep.url(), "weft-demo warm-up"); err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
			if b, err := os.ReadFile(perfMap); err == nil && strings.Contains(string(b), fn) {
				break
			}
			if time.Now().After(end) {
				return fmt.Errorf("warm-up: %s does not name %s after %d requests to %s", perfMap, fn, n, ep.url())
			}
		}
	}
	return nil
}

// burnFunction is the hot loop an endpoint's requests run, if any: the
// noagent frontend burns in the same function as the frontend.
func burnFunction(ep endpoint) string {
	switch {
	case ep.burn != "":
		return ep.burn
	case ep.service == "frontend-noagent" && ep.path == "/cpu":
		return "burnCpuFrontendHotLoop"
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
