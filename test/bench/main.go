// Command bench measures weft's overhead: the same Go HTTP server under the
// same wrk load, with weft off and on, alternating in one run, and prints a
// Markdown report (docs/benchmarks.md). Run it as root via `make bench`.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"

	"github.com/weftdev/weft/pkg/metrics"
)

var (
	rounds    = flag.Int("rounds", 3, "off/on pairs")
	duration  = flag.Duration("duration", 15*time.Second, "wrk duration per run")
	conns     = flag.Int("connections", 32, "wrk connections")
	weftBin   = flag.String("weft", "bin/weft", "weft binary")
	weftBase  = flag.String("weft-base", "", "weft binary built at a baseline commit, for mode base")
	cpuProf   = flag.String("cpuprofile", "", "write a CPU profile of weft during the first traced run here")
	rate      = flag.Int("rate", 0, "fixed request rate (open loop); 0 runs wrk at saturation")
	chain     = flag.Bool("chain", false, "load a two-service chain (thread-per-request front calling a net/http backend)")
	chainKA   = flag.Bool("chain-keepalive", false, "with -chain: the front keeps one backend connection per thread instead of one per call")
	goChain   = flag.Bool("go-chain", false, "load a Go net/http chain: test/e2e/testdata/goasync's /req (waits 0-10 ms, calls the backend with net/http's client)")
	nodeChain = flag.Bool("node-chain", false, "load a Node.js chain: test/e2e/testdata/nodeasync's /req (waits 0-10 ms, calls the backend with http.get through a keep-alive agent), weft's companion loaded by NODE_OPTIONS in every mode")
	nodeCalls = flag.String("node-calls", "http", "with -node-chain: how the front calls the backend: http (http.get through a keep-alive agent) or h2 (one node:http2 session over h2c; the backend offers h2c)")
	modes     = flag.String("modes", "off,on", "weft configurations, alternating: off, on, noprop (weft with --propagation=off), nohooks (weft with --runtime-hooks=off), notls (weft with --tls=off), floor (-send-cost only: no weft, the sender's connections in a pass-through sockhash), prof<Hz> (on, profiling at Hz), ratio<R> (on, sampling traces at ratio R), base (on, with the -weft-base binary: a baseline commit side by side), syscalls (on, on the syscall-tracepoint path), metrics (on, with RED and service-graph metrics, which every other mode leaves off)")
)

// rotated is order started at its i-th mode: over rounds, every mode runs
// first, second... as often, so that drift within a round (a first run
// after a quiet spell, caches) favours none.
func rotated(order []string, i int) []string {
	k := i % len(order)
	return append(append([]string(nil), order[k:]...), order[:k]...)
}

type run struct {
	round     int
	mode      string // off, on or noprop
	traced    bool
	reqPerSec float64
	requests  float64
	p50, p99  time.Duration
	srvCPU    time.Duration // server process user+system time during the run
	weftCPU   time.Duration
	weftRSSKB uint64
	lost      uint64
	spans     uint64
	progStats map[string]progStat
	// profSamples are the samples weft read (profiling modes).
	profSamples uint64
	// unheld are the spans the profiler passed on at once (profiling modes).
	unheld uint64
	// profCPU is the CPU weft spent in profiling code, per second of the
	// run, from weft's own CPU profile (profiling modes).
	profCPU float64
}

type progStat struct{ runNs, runCnt uint64 }

func main() {
	flag.Parse()
	log.SetFlags(0)
	if *sendCost {
		runSendCost()
		return
	}
	if *untracedWrite {
		runUntracedWrite()
		return
	}
	if *startup {
		runStartup()
		return
	}
	if *goroutineCost {
		runGoroutineCost()
		return
	}
	if *grpcBench || *h2Bench {
		if *rate == 0 {
			*rate = 1000
		}
		runH2Bench(*grpcBench)
		return
	}
	if *tlsBench {
		if *rate == 0 {
			*rate = 1000
		}
		runTLSBench()
		return
	}
	if *jvmBench {
		if *rate == 0 {
			*rate = 500
		}
		runJVMBench()
		return
	}
	dir, err := os.MkdirTemp("", "weft-bench-")
	check(err)
	defer os.RemoveAll(dir)
	defer removeProfDirs()
	srvBin := filepath.Join(dir, "websrv")
	out, err := exec.Command("go", "build", "-o", srvBin, "./test/e2e/testdata/websrv").CombinedOutput()
	if err != nil {
		log.Fatalf("build websrv: %v\n%s", err, out)
	}
	check(os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("1"), 0o644))
	defer os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("0"), 0o644)

	backend, addr := startServer(srvBin, "-mode=nethttp", "-addr=127.0.0.1:0", "-h2="+strconv.FormatBool(*nodeCalls == "h2"))
	defer backend.Process.Kill()
	url := "http://" + addr + *urlPath
	pids := []int{backend.Process.Pid}
	if *chain {
		front, faddr := startServer(srvBin, "-mode=thread", "-addr=127.0.0.1:0", "-downstream="+addr,
			"-downstream-keepalive="+strconv.FormatBool(*chainKA))
		defer front.Process.Kill()
		url = "http://" + faddr + "/call"
		pids = append(pids, front.Process.Pid)
	}

	if *goChain {
		goBin := filepath.Join(dir, "goasync")
		cmd := exec.Command("go", "build", "-o", goBin, ".")
		cmd.Dir = "test/e2e/testdata/goasync"
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("build goasync: %v\n%s", err, out)
		}
		front, faddr := startServer(goBin, "-addr=127.0.0.1:0", "-backend="+addr)
		defer front.Process.Kill()
		url = "http://" + faddr + "/req/1"
		pids = append(pids, front.Process.Pid)
	}

	if *nodeChain {
		companion := filepath.Join(dir, "weft-node.js")
		if out, err := exec.Command(*weftBin, "node", "script", "--out", companion).CombinedOutput(); err != nil {
			log.Fatalf("weft node script: %v\n%s", err, out)
		}
		front := exec.Command("node", "test/e2e/testdata/nodeasync/app.js", addr, *nodeCalls)
		front.Env = append(os.Environ(), "NODE_OPTIONS=--require "+companion)
		if *nodeCalls == "h2" {
			// A session per run: weft follows the connections opened
			// after it started, and each run starts its own.
			front.Env = append(front.Env, "H2_IDLE_CLOSE_MS=500")
		}
		orphanless(front)
		stdout, _ := front.StdoutPipe()
		check(front.Start())
		defer front.Process.Kill()
		faddr, err := bufio.NewReader(stdout).ReadString('\n')
		check(err)
		url = "http://" + strings.TrimSpace(faddr) + "/req/1"
		pids = append(pids, front.Process.Pid)
	}

	otlp := startSink()
	// Warm up the server and the page cache.
	wrk(url, 3*time.Second)
	var runs []run
	order := strings.Split(*modes, ",")
	for i := 0; i < *rounds; i++ {
		for _, m := range rotated(order, i) {
			r := measure(url, pids, m, otlp)
			r.round = i
			runs = append(runs, r)
		}
	}
	report(runs, order)
	reportProfiling(runs, order)
	reportSampling(runs, order)
}

// startWeft starts weft in a traced mode (on, noprop, prof<Hz>) on pids,
// exporting to otlp, and returns it once its metrics answer, with their URL.
func startWeft(mode string, pids []int, otlp string, pre ...string) (*exec.Cmd, string) {
	port := freePort()
	metrics := fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	var ps []string
	for _, p := range pids {
		ps = append(ps, strconv.Itoa(p))
	}
	prop, hooks, probes := "headers", "on", "auto"
	var extra []string // flags older weft binaries (-weft-base) lack
	switch mode {
	case "notls":
		extra = append(extra, "--tls=off")
	case "syscalls":
		probes = "syscalls"
	case "noprop":
		prop = "off"
	case "nohooks":
		hooks = "off"
	}
	bin := *weftBin
	if mode == "base" {
		if *weftBase == "" {
			log.Fatal("mode base needs -weft-base")
		}
		bin = *weftBase
	}
	args := append(pre, bin, "run", "--probes="+probes, "--pid="+strings.Join(ps, ","), "--propagation="+prop,
		"--runtime-hooks="+hooks,
		"--metrics-addr=127.0.0.1:"+strconv.Itoa(port), "--stats-interval=0", "--otlp-endpoint="+otlp, "--otlp-insecure")
	args = append(args, extra...)
	args = append(args, profileArgs(mode)...)
	args = append(args, spanMetricsArgs(mode)...)
	w := exec.Command(args[0], append(args[1:], samplerArgs(mode)...)...)
	orphanless(w)
	check(w.Start())
	waitHTTP(metrics)
	return w, metrics
}

// orphanless has the kernel kill cmd if the benchmark dies first (killed,
// or log.Fatal past its defers): a weft left running keeps its programs on
// the host's socket tracepoints and skews every later measurement.
func orphanless(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

// spanMetricsArgs turns span metrics on only in the metrics mode, so that
// the other modes measure what they did before metrics existed.
func spanMetricsArgs(mode string) []string {
	on := strconv.FormatBool(mode == "metrics")
	return []string{"--metrics-red=" + on, "--metrics-service-graph=" + on}
}

func startServer(bin string, args ...string) (*exec.Cmd, string) {
	srv := exec.Command(bin, args...)
	orphanless(srv)
	stdout, _ := srv.StdoutPipe()
	check(srv.Start())
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	check(err)
	return srv, strings.TrimSpace(addr)
}

func measure(url string, pids []int, mode string, otlp string) run {
	r := run{mode: mode, traced: mode != "off"}
	traced := r.traced
	var w *exec.Cmd
	var metrics string
	if traced {
		w, metrics = startWeft(mode, pids, otlp)
	}
	before := cpuTimes(pids)
	var weftBefore time.Duration
	progBefore := map[string]progStat{}
	if traced {
		weftBefore = cpuTime(w.Process.Pid)
		progBefore = progStats(w.Process.Pid)
	}
	profDone := make(chan struct{})
	if traced && *cpuProf != "" {
		go func() {
			defer close(profDone)
			secs := int(*duration/time.Second) - 2
			resp, err := http.Get(strings.TrimSuffix(metrics, "/metrics") + "/debug/pprof/profile?seconds=" + strconv.Itoa(secs))
			check(err)
			defer resp.Body.Close()
			f, err := os.Create(*cpuProf)
			check(err)
			defer f.Close()
			_, err = io.Copy(f, resp.Body)
			check(err)
			*cpuProf = "" // first traced run only
		}()
	} else {
		close(profDone)
	}
	waitProfCPU := startProfilerCPU(metrics, mode)
	var res wrkResult
	if *rate > 0 {
		res = openLoop(url, *rate, *duration, *conns)
	} else {
		res = wrk(url, *duration)
	}
	<-profDone
	r.profCPU = waitProfCPU()
	r.reqPerSec, r.requests, r.p50, r.p99 = res.rps, res.requests, res.p50, res.p99
	r.srvCPU = cpuTimes(pids) - before
	if traced {
		r.weftCPU = cpuTime(w.Process.Pid) - weftBefore
		r.weftRSSKB = rss(w.Process.Pid)
		after := progStats(w.Process.Pid)
		r.progStats = map[string]progStat{}
		for name, a := range after {
			b := progBefore[name]
			r.progStats[name] = progStat{a.runNs - b.runNs, a.runCnt - b.runCnt}
		}
		m := scrape(metrics)
		r.lost, r.spans = m["weft_events_lost"], m["weft_spans_server"]
		r.profSamples = m["weft_profile_samples_read"]
		r.unheld = m["weft_spans_profile_unheld"]
		if *nodeCalls == "h2" {
			log.Printf("%s: HTTP/2 streams decided in the kernel %d, linked at the server %d", mode, m["weft_h2_opened"],
				m["weft_h2_served_linked"])
		}
		w.Process.Signal(os.Interrupt)
		w.Wait()
	}
	log.Printf("%s: %.0f req/s, p50 %v p99 %v, server CPU %v, weft CPU %v", mode, r.reqPerSec, r.p50, r.p99, r.srvCPU, r.weftCPU)
	return r
}

type wrkResult struct {
	rps, requests float64
	p50, p99      time.Duration
	lat           []time.Duration // sorted, open loop only
}

var (
	reRPS  = regexp.MustCompile(`Requests/sec:\s+([\d.]+)`)
	reReqs = regexp.MustCompile(`(\d+) requests in`)
	reP    = regexp.MustCompile(`(?m)^\s+(50|99)%\s+([\d.]+)(us|ms|s)`)
)

func wrk(url string, d time.Duration) wrkResult {
	out, err := exec.Command("wrk", "-t1", "-c"+strconv.Itoa(*conns), "-d"+d.String(), "--latency", url).CombinedOutput()
	if err != nil {
		log.Fatalf("wrk: %v\n%s", err, out)
	}
	s := string(out)
	var r wrkResult
	if m := reRPS.FindStringSubmatch(s); m != nil {
		r.rps, _ = strconv.ParseFloat(m[1], 64)
	}
	if m := reReqs.FindStringSubmatch(s); m != nil {
		r.requests, _ = strconv.ParseFloat(m[1], 64)
	}
	for _, m := range reP.FindAllStringSubmatch(s, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[m[3]]
		dur := time.Duration(v * float64(unit))
		if m[1] == "50" {
			r.p50 = dur
		} else {
			r.p99 = dur
		}
	}
	if r.rps == 0 {
		log.Fatalf("cannot read wrk output:\n%s", s)
	}
	return r
}

func cpuTimes(pids []int) time.Duration {
	var t time.Duration
	for _, p := range pids {
		t += cpuTime(p)
	}
	return t
}

// cpuTime is utime+stime of a process, from /proc/<pid>/stat.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	return statCPU(string(b))
}

// statCPU is utime+stime from the text of a /proc stat file (a process's or a thread's).
func statCPU(s string) time.Duration {
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	ut, _ := strconv.ParseUint(f[11], 10, 64)
	st, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

func rss(pid int) uint64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// progStats reads run time and count of the programs the weft process pid
// holds (kernel BPF stats): another weft on the host has its own.
func progStats(pid int) map[string]progStat {
	out, err := exec.Command("bpftool", "prog", "show", "--json").Output()
	check(err)
	var progs []struct {
		ID     uint32 `json:"id"`
		Name   string `json:"name"`
		RunNs  uint64 `json:"run_time_ns"`
		RunCnt uint64 `json:"run_cnt"`
	}
	check(json.Unmarshal(out, &progs))
	own := progIDs(pid)
	m := map[string]progStat{}
	for _, p := range progs {
		if strings.HasPrefix(p.Name, "weft_") && own[p.ID] {
			s := m[p.Name]
			m[p.Name] = progStat{s.runNs + p.RunNs, s.runCnt + p.RunCnt}
		}
	}
	return m
}

// progIDs are the BPF programs pid has open, from its fds' fdinfo.
func progIDs(pid int) map[uint32]bool {
	ids := map[uint32]bool{}
	infos, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fdinfo/*", pid))
	for _, f := range infos {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "prog_id:"); ok {
				if id, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32); err == nil {
					ids[uint32(id)] = true
				}
			}
		}
	}
	return ids
}

func scrape(url string) map[string]uint64 {
	resp, err := http.Get(url)
	check(err)
	defer resp.Body.Close()
	mfs, err := metrics.ParseText(resp.Body)
	check(err)
	m := map[string]uint64{}
	for k, v := range metrics.SelfMetrics(mfs) {
		m["weft_"+k] = v
	}
	return m
}

// waitHTTP polls often enough for -startup's figure to be the start-up's.
func waitHTTP(url string) {
	for i := 0; i < 3000; i++ {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	log.Fatalf("weft did not come up (%s)", url)
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// rawCodec hands gRPC messages over as bytes: the sink below must not
// spend the benchmark's CPU decoding what weft exports.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*(v.(*[]byte)) = b
	return nil
}
func (rawCodec) Name() string { return "proto" }

// startSink runs an OTLP/gRPC endpoint that accepts every export unread,
// so traced runs pay for a real export and the receiving end costs little.
func startSink() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		var in []byte
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}
		out := []byte{} // an empty ExportTraceServiceResponse
		return stream.SendMsg(&out)
	}))
	go srv.Serve(l)
	return l.Addr().String()
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func report(runs []run, order []string) {
	by := map[string][]run{}
	var on []run
	for _, r := range runs {
		by[r.mode] = append(by[r.mode], r)
		if r.traced {
			on = append(on, r)
		}
	}
	mean := func(rs []run, f func(run) float64) float64 {
		var s float64
		for _, r := range rs {
			s += f(r)
		}
		return s / float64(len(rs))
	}
	rps := func(r run) float64 { return r.reqPerSec }
	cpuPerReq := func(r run) float64 { return float64(r.srvCPU.Microseconds()) / r.requests }
	p50 := func(r run) float64 { return float64(r.p50.Microseconds()) }
	p99 := func(r run) float64 { return float64(r.p99.Microseconds()) }
	weftPerReq := func(r run) float64 { return float64(r.weftCPU.Microseconds()) / r.requests }

	// One column per configuration, then each one's ratio to the first.
	base := order[0]
	fmt.Printf("| metric |")
	for _, m := range order {
		fmt.Printf(" weft %s |", m)
	}
	for _, m := range order[1:] {
		fmt.Printf(" %s/%s |", m, base)
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|", 2*len(order)-1))
	row := func(name string, f func(run) float64, unit string) {
		fmt.Printf("| %s |", name)
		for _, m := range order {
			fmt.Printf(" %.1f %s |", mean(by[m], f), unit)
		}
		for _, m := range order[1:] {
			fmt.Printf(" %.3f |", mean(by[m], f)/mean(by[base], f))
		}
		fmt.Println()
	}
	row("throughput", rps, "req/s")
	row("server CPU per request", cpuPerReq, "µs")
	row("latency p50", p50, "µs")
	row("latency p99", p99, "µs")
	row("weft's own CPU per request", weftPerReq, "µs")

	// Drift between rounds is larger than the effects looked for: each
	// configuration against the previous one, round by round.
	if len(order) > 1 {
		fmt.Printf("\nPaired by round (mean ± standard error of the per-round ratios):\n\n|")
		for i := 1; i < len(order); i++ {
			fmt.Printf(" | %s/%s", order[i], order[i-1])
		}
		fmt.Printf(" |\n|---|%s\n", strings.Repeat("---|", len(order)-1))
		paired := func(name string, f func(run) float64) {
			fmt.Printf("| %s |", name)
			for i := 1; i < len(order); i++ {
				var ratios []float64
				for _, a := range by[order[i]] {
					for _, b := range by[order[i-1]] {
						if a.round == b.round && f(b) > 0 {
							ratios = append(ratios, f(a)/f(b))
						}
					}
				}
				m, se := meanSE(ratios)
				fmt.Printf(" %.3f ± %.3f |", m, se)
			}
			fmt.Println()
		}
		paired("server CPU per request", cpuPerReq)
		paired("latency p50", p50)
		paired("weft's own CPU per request", weftPerReq)
	}
	var rssMax, lost, spans, reqs uint64
	for _, r := range on {
		rssMax = max(rssMax, r.weftRSSKB)
		lost += r.lost
		spans += r.spans
		reqs += uint64(r.requests)
	}
	fmt.Printf("\nweft RSS (max) %d KiB; events lost %d (server spans %d for %d requests over all traced runs)\n", rssMax, lost, spans, reqs)
	// Per traced mode, so that what a mode adds shows program by program.
	var traced []string
	total := map[string]map[string]progStat{}
	modeReqs := map[string]float64{}
	for _, r := range on {
		if total[r.mode] == nil {
			total[r.mode] = map[string]progStat{}
			traced = append(traced, r.mode)
		}
		modeReqs[r.mode] += float64(r.requests)
		for k, v := range r.progStats {
			t := total[r.mode][k]
			total[r.mode][k] = progStat{t.runNs + v.runNs, t.runCnt + v.runCnt}
		}
	}
	fmt.Printf("\nBPF programs per request in each traced mode (kernel BPF stats): calls, mean ns per call, ns per request\n\n| program |")
	for _, m := range traced {
		fmt.Printf(" %s |", m)
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|", len(traced)))
	names := map[string]bool{}
	for _, m := range traced {
		for k := range total[m] {
			names[k] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for k := range names {
		ran := false
		for _, m := range traced {
			ran = ran || total[m][k].runCnt > 0
		}
		if ran { // programs of other runtimes or paths stay out
			sorted = append(sorted, k)
		}
	}
	sort.Strings(sorted)
	sums := make([]float64, len(traced))
	for _, k := range sorted {
		fmt.Printf("| %s |", k)
		for i, m := range traced {
			v := total[m][k]
			if v.runCnt == 0 || modeReqs[m] == 0 {
				fmt.Printf(" – |")
				continue
			}
			perReq := float64(v.runNs) / modeReqs[m]
			sums[i] += perReq
			fmt.Printf(" %.2f × %.0f ns = %.0f ns |", float64(v.runCnt)/modeReqs[m], float64(v.runNs)/float64(v.runCnt), perReq)
		}
		fmt.Println()
	}
	fmt.Printf("| all |")
	for _, v := range sums {
		fmt.Printf(" %.0f ns |", v)
	}
	fmt.Println()
}
