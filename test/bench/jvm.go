package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The JVM agent benchmark: a front service calling the demo backend under a
// fixed load (-jvm-app ktor: the Ktor demo frontend's /direct, a server
// span, a coroutine hop to the CIO client, the backend's span; -jvm-app
// spring-webflux: the Spring Boot test app on WebFlux calling through
// OkHttp's enqueue), with each way of tracing it the user could pick, side
// by side:
//
//	weft        weft on, no agent (the trace splits)
//	weft+agent  weft on, weft's Java agent
//	otel        no weft, the OpenTelemetry Java agent (in-process tracing)
//	off         nothing (the baseline)
var (
	jvmBench  = flag.Bool("jvm", false, "benchmark the JVM agent on the Ktor demo's /direct")
	jvmModes  = flag.String("jvm-modes", "off,weft,weft+agent,otel", "configurations for -jvm")
	otelAgent = flag.String("otel-agent", ".cache/opentelemetry-javaagent.jar", "the OpenTelemetry Java agent jar for -jvm")
	agentJar  = flag.String("agent-jar", "", "weft's Java agent for -jvm (default: the embedded pkg/javaagent/weft-agent.jar)")
	jvmWarmup = flag.Duration("jvm-warmup", 20*time.Second, "load before measuring each JVM configuration (JIT)")
	jvmOpts   = flag.String("jvm-opts", "", "more options for every JVM of every configuration (space-separated), e.g. a fixed heap")
	jvmApp    = flag.String("jvm-app", "ktor", "the front service for -jvm: ktor (demo frontend, /direct) or spring-webflux (test/apps/jvm/spring, OkHttp enqueue)")
)

// jvmFront is the service the JVM benchmark loads, in front of the demo backend.
type jvmFront struct {
	jar  string
	env  []string
	path string
}

func jvmFrontOf(root, app string) jvmFront {
	switch app {
	case "ktor":
		return jvmFront{jar: filepath.Join(root, "demo", "services", "frontend", "target", "frontend.jar"), path: "/direct"}
	case "spring-webflux":
		return jvmFront{jar: filepath.Join(root, "test", "apps", "jvm", "spring", "target", "spring.jar"),
			env: []string{"WEB_STACK=webflux", "OKHTTP_MAX_PER_HOST=64"}, path: "/okhttp-enqueue/1"}
	}
	log.Fatalf("-jvm-app %q: want ktor or spring-webflux", app)
	return jvmFront{}
}

type jvmRun struct {
	mode         string
	reqPerSec    float64
	requests     float64
	p50, p99     time.Duration
	lat          []time.Duration // every request's latency, sorted
	jvmCPU       time.Duration   // both JVMs
	jitCPU       time.Duration   // of it, their JIT compiler threads'
	weftCPU      time.Duration
	agentPackets uint64 // ioctl packets the kernel saw from the JVMs
	spans        uint64
}

func runJVMBench() {
	root, err := os.Getwd()
	check(err)
	backendJar := filepath.Join(root, "demo", "services", "backend", "target", "backend.jar")
	front := jvmFrontOf(root, *jvmApp)
	agent := *agentJar
	if agent == "" {
		agent = filepath.Join(root, "pkg", "javaagent", "weft-agent.jar")
	}
	otlp := startSink()
	var runs []jvmRun
	order := strings.Split(*jvmModes, ",")
	for i := 0; i < *rounds; i++ {
		for _, mode := range rotated(order, i) {
			runs = append(runs, measureJVM(mode, backendJar, front, agent, otlp))
		}
	}
	reportJVM(runs, order)
}

func startJVM(service, jarPath string, env []string, opts ...string) (*exec.Cmd, string) {
	port := freePort()
	args := append([]string{"-XX:+PreserveFramePointer"}, strings.Fields(*jvmOpts)...)
	cmd := exec.Command("java", append(append(args, opts...), "-jar", jarPath)...)
	cmd.Env = append(append(os.Environ(), "OTEL_SERVICE_NAME="+service, "PORT="+strconv.Itoa(port)), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	orphanless(cmd)
	check(cmd.Start())
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(url + "/health")
	return cmd, url
}

func measureJVM(mode, backendJar string, fr jvmFront, agent, otlp string) jvmRun {
	r := jvmRun{mode: mode}
	var opts []string
	switch {
	case mode == "weft+agent":
		opts = []string{"-javaagent:" + agent}
	case strings.HasPrefix(mode, "weft+agent="): // another build of the agent, to compare
		opts = []string{"-javaagent:" + strings.TrimPrefix(mode, "weft+agent=")}
	case mode == "otel":
		if _, err := os.Stat(*otelAgent); err != nil {
			log.Fatalf("-jvm otel needs the OpenTelemetry Java agent at %s (scripts/bench.sh fetches it): %v", *otelAgent, err)
		}
		opts = []string{"-javaagent:" + *otelAgent, "-Dotel.exporter.otlp.endpoint=http://" + otlp,
			"-Dotel.exporter.otlp.protocol=grpc", "-Dotel.metrics.exporter=none", "-Dotel.logs.exporter=none"}
	}
	backend, burl := startJVM("backend", backendJar, nil, opts...)
	defer func() { backend.Process.Kill(); backend.Wait() }()
	front, furl := startJVM("frontend", fr.jar, append([]string{"BACKEND_URL=" + burl}, fr.env...), opts...)
	defer func() { front.Process.Kill(); front.Wait() }()
	pids := []int{backend.Process.Pid, front.Process.Pid}
	url := furl + fr.path

	var w *exec.Cmd
	var metrics string
	if strings.HasPrefix(mode, "weft") {
		port := freePort()
		metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
		w = exec.Command(*weftBin, "run", "--pid="+strconv.Itoa(pids[0])+","+strconv.Itoa(pids[1]),
			"--metrics-addr=127.0.0.1:"+strconv.Itoa(port), "--stats-interval=0", "--otlp-endpoint="+otlp, "--otlp-insecure",
			"--metrics-red=false", "--metrics-service-graph=false")
		orphanless(w)
		check(w.Start())
		defer func() { w.Process.Signal(os.Interrupt); w.Wait() }()
		waitHTTP(metrics)
	}
	openLoop(url, *rate, *jvmWarmup, *conns)
	before := cpuTimes(pids)
	threadsBefore := threadTimes(pids)
	var weftBefore time.Duration
	var m0 map[string]uint64
	if w != nil {
		weftBefore = cpuTime(w.Process.Pid)
		m0 = scrape(metrics)
	}
	res := openLoop(url, *rate, *duration, *conns)
	r.reqPerSec, r.requests, r.p50, r.p99, r.lat = res.rps, res.requests, res.p50, res.p99, res.lat
	r.jvmCPU = cpuTimes(pids) - before
	var busiest []string
	for group, d := range threadTimes(pids) {
		d -= threadsBefore[group]
		if group == "C1 CompilerThre" || group == "C2 CompilerThre" { // "C1/C2 CompilerThread<n>", cut to 15 bytes
			r.jitCPU += d
		}
		if d >= 100*time.Millisecond {
			busiest = append(busiest, fmt.Sprintf("%s=%v", group, d))
		}
	}
	slices.Sort(busiest)
	log.Printf("%s: JVM threads' CPU by name: %s", mode, strings.Join(busiest, " "))
	if w != nil {
		r.weftCPU = cpuTime(w.Process.Pid) - weftBefore
		m1 := scrape(metrics)
		r.agentPackets = m1["weft_agent_packets"] - m0["weft_agent_packets"]
		r.spans = m1["weft_spans_server"] - m0["weft_spans_server"]
	}
	log.Printf("%s: %.0f req/s, p50 %v p99 %v, JVM CPU %v (JIT %v), weft CPU %v, agent packets %d",
		mode, r.reqPerSec, r.p50, r.p99, r.jvmCPU, r.jitCPU, r.weftCPU, r.agentPackets)
	return r
}

func reportJVM(runs []jvmRun, order []string) {
	by := map[string][]jvmRun{}
	for _, r := range runs {
		by[r.mode] = append(by[r.mode], r)
	}
	mean := func(rs []jvmRun, f func(jvmRun) float64) float64 {
		var s float64
		for _, r := range rs {
			s += f(r)
		}
		return s / float64(len(rs))
	}
	rows := []struct {
		name string
		f    func(jvmRun) float64
		unit string
	}{
		{"throughput (req/s)", func(r jvmRun) float64 { return r.reqPerSec }, "%.0f"},
		{"p50 (µs)", func(r jvmRun) float64 { return float64(r.p50.Microseconds()) }, "%.0f"},
		{"p99 (µs)", func(r jvmRun) float64 { return float64(r.p99.Microseconds()) }, "%.0f"},
		{"JVM CPU per request (µs)", func(r jvmRun) float64 { return float64(r.jvmCPU.Microseconds()) / r.requests }, "%.1f"},
		{"of it, JIT compiler threads (µs)", func(r jvmRun) float64 { return float64(r.jitCPU.Microseconds()) / r.requests }, "%.1f"},
		{"weft CPU per request (µs)", func(r jvmRun) float64 { return float64(r.weftCPU.Microseconds()) / r.requests }, "%.1f"},
		{"total CPU per request (µs)", func(r jvmRun) float64 {
			return float64((r.jvmCPU + r.weftCPU).Microseconds()) / r.requests
		}, "%.1f"},
		{"agent ioctl packets per request", func(r jvmRun) float64 { return float64(r.agentPackets) / r.requests }, "%.3f"},
	}
	fmt.Printf("| metric |")
	for _, m := range order {
		fmt.Printf(" %s |", m)
	}
	fmt.Printf("\n|---|")
	for range order {
		fmt.Printf("---|")
	}
	fmt.Println()
	for _, row := range rows {
		fmt.Printf("| %s |", row.name)
		for _, m := range order {
			fmt.Printf(" "+row.unit+" |", mean(by[m], row.f))
		}
		fmt.Println()
	}
	// The mean of per-run p99s moves with a single slow run; the p99 of
	// all runs' requests together, and the per-run spread, say more.
	pooled := func(m string, q float64) string {
		var all []time.Duration
		var per []string
		for _, r := range by[m] {
			all = append(all, r.lat...)
			per = append(per, strconv.FormatInt(r.p99.Microseconds(), 10))
		}
		if len(all) == 0 {
			return "–"
		}
		slices.Sort(all)
		return fmt.Sprintf("%d (runs: %s)", all[int(float64(len(all))*q)].Microseconds(), strings.Join(per, ", "))
	}
	fmt.Printf("| p99 of all runs' requests (µs) |")
	for _, m := range order {
		fmt.Printf(" %s |", pooled(m, 0.99))
	}
	fmt.Println()
	// Rounds run the configurations back to back, so each round's ratios
	// cancel the VM's drift between rounds.
	total := func(r jvmRun) float64 { return float64((r.jvmCPU + r.weftCPU).Microseconds()) / r.requests }
	// Without the JIT compilers' threads: the JVMs still compile in the
	// window, more with more instrumented code.
	steady := func(r jvmRun) float64 { return float64((r.jvmCPU - r.jitCPU + r.weftCPU).Microseconds()) / r.requests }
	fmt.Printf("\nPaired by round (mean ± standard error over %d rounds):\n\n", *rounds)
	fmt.Println("| configurations | total CPU per request, ratio | the same without JIT compilation, ratio | p99 difference (µs) |")
	fmt.Println("|---|---|---|---|")
	for i, a := range order {
		for _, b := range order[i+1:] {
			var ratios, steadyRatios, p99s []float64
			for k := range by[a] {
				if k < len(by[b]) {
					ratios = append(ratios, total(by[a][k])/total(by[b][k]))
					steadyRatios = append(steadyRatios, steady(by[a][k])/steady(by[b][k]))
					p99s = append(p99s, float64((by[a][k].p99 - by[b][k].p99).Microseconds()))
				}
			}
			rm, rse := meanSE(ratios)
			sm, sse := meanSE(steadyRatios)
			pm, pse := meanSE(p99s)
			fmt.Printf("| %s / %s | %.3f ± %.3f | %.3f ± %.3f | %+.0f ± %.0f |\n", a, b, rm, rse, sm, sse, pm, pse)
		}
	}
	fmt.Printf("\n%s: runs per configuration: %d, %d req/s offered for %v each after %v of warm-up, JVM options %q\n",
		*jvmApp, *rounds, *rate, *duration, *jvmWarmup, *jvmOpts)
}

// threadTimes is the CPU time of the processes' live threads, summed by
// thread name without its trailing digits, from /proc/<pid>/task/*/stat.
func threadTimes(pids []int) map[string]time.Duration {
	out := map[string]time.Duration{}
	for _, p := range pids {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		check(err)
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", p, task.Name()))
			if err != nil {
				continue // the thread ended
			}
			s := string(b)
			comm := strings.TrimRight(s[strings.IndexByte(s, '(')+1:strings.LastIndexByte(s, ')')], "0123456789#-")
			out[comm] += statCPU(s)
		}
	}
	return out
}
