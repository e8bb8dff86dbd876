package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

var (
	grpcBench = flag.Bool("grpc", false, "benchmark gRPC calls over h2c (test/e2e/testdata/h2app: grpc-go client and server, unary calls at -rate, default 1000/s): CPU per call of both processes, weft off and on (-modes)")
	h2Bench   = flag.Bool("h2", false, "benchmark HTTP/2 requests over h2c (test/e2e/testdata/h2app: net/http client and server, GETs with a traceparent at -rate, default 1000/s): CPU per request of both processes, weft off and on (-modes)")
)

// runH2Bench measures what weft costs per gRPC call (grpc) or HTTP/2
// request: h2app's client makes calls at a fixed rate to its server, each
// run on a connection opened after weft started, and the two processes'
// CPU per call is compared across modes, round by round.
func runH2Bench(grpc bool) {
	dir, err := os.MkdirTemp("", "weft-bench-")
	check(err)
	defer os.RemoveAll(dir)
	check(os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("1"), 0o644))
	defer os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("0"), 0o644)
	bin := filepath.Join(dir, "h2app")
	if out, err := exec.Command("go", "build", "-o", bin, "./test/e2e/testdata/h2app").CombinedOutput(); err != nil {
		log.Fatalf("build h2app: %v\n%s", err, out)
	}
	serverMode, loadMode, what := "-mode=h2c-server", "-mode=h2-load", "HTTP/2 GETs (h2c, net/http, with a traceparent)"
	if grpc {
		serverMode, loadMode, what = "-mode=grpc-server", "-mode=grpc-load", "gRPC unary calls"
	}
	srv, addr := startServer(bin, serverMode)
	defer srv.Process.Kill()
	load := exec.Command(bin, loadMode, "-addr="+addr)
	orphanless(load)
	stdin, err := load.StdinPipe()
	check(err)
	stdout, err := load.StdoutPipe()
	check(err)
	load.Stderr = os.Stderr
	check(load.Start())
	defer load.Process.Kill()
	out := bufio.NewReader(stdout)
	_, err = out.ReadString('\n') // its pid
	check(err)
	calls := func(d time.Duration) wrkResult {
		fmt.Fprintf(stdin, "%d %s\n", *rate, d)
		line, err := out.ReadString('\n')
		check(err)
		var n, p50, p99 int64
		if _, err := fmt.Sscan(line, &n, &p50, &p99); err != nil {
			log.Fatalf("load output %q: %v", line, err)
		}
		return wrkResult{rps: float64(n) / d.Seconds(), requests: float64(n), p50: time.Duration(p50), p99: time.Duration(p99)}
	}
	pids := []int{srv.Process.Pid, load.Process.Pid}
	otlp := startSink()
	calls(3 * time.Second) // warm up
	var runs []run
	order := strings.Split(*modes, ",")
	for i := 0; i < *rounds; i++ {
		for _, m := range rotated(order, i) {
			r := run{mode: m, traced: m != "off", round: i}
			var w *exec.Cmd
			var metrics string
			if r.traced {
				w, metrics = startWeft(m, pids, otlp)
			}
			before := cpuTimes(pids)
			var weftBefore time.Duration
			progBefore := map[string]progStat{}
			if r.traced {
				weftBefore = cpuTime(w.Process.Pid)
				progBefore = progStats(w.Process.Pid)
			}
			res := calls(*duration)
			r.srvCPU = cpuTimes(pids) - before
			r.reqPerSec, r.requests, r.p50, r.p99 = res.rps, res.requests, res.p50, res.p99
			if r.traced {
				r.weftCPU = cpuTime(w.Process.Pid) - weftBefore
				r.weftRSSKB = rss(w.Process.Pid)
				r.progStats = map[string]progStat{}
				for name, a := range progStats(w.Process.Pid) {
					b := progBefore[name]
					r.progStats[name] = progStat{a.runNs - b.runNs, a.runCnt - b.runCnt}
				}
				time.Sleep(time.Second) // the last spans read
				s := scrape(metrics)
				r.lost, r.spans = s["weft_events_lost"], s["weft_spans_server"]
				if s["weft_h2_conns_lost"] > 0 {
					log.Fatalf("%s: weft lost %d HTTP/2 connections", m, s["weft_h2_conns_lost"])
				}
				w.Process.Signal(os.Interrupt)
				w.Wait()
			}
			log.Printf("%s: %.0f calls/s, p50 %v p99 %v, client+server CPU %v, weft CPU %v, server spans %d",
				m, r.reqPerSec, r.p50, r.p99, r.srvCPU, r.weftCPU, r.spans)
			runs = append(runs, r)
		}
	}
	fmt.Printf("\n%s at %d/s for %v per run, %d rounds; \"server CPU\" is client and server together\n\n", what, *rate, *duration, *rounds)
	report(runs, order)
}
