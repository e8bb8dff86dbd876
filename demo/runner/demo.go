package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/weftdev/weft/pkg/profiler/store"
)

// demo is one run: what it started and where its files are.
type demo struct {
	opts     options
	log      *slog.Logger
	ports    ports
	dir      string // .cache/demo: logs, profiles, flame graphs, Jaeger's config
	jaeger   jaegerAPI
	profiler bool // this weft has the span profiler

	flameChecks []flameCheck // of the endpoints whose flame graph must show a function

	mu       sync.Mutex
	children []*child // in start order
	jvms     []int    // pids of the JVMs, whose /tmp files are removed at the end
}

// flameCheck is the verdict on one endpoint's flame graph.
type flameCheck struct {
	mark   string // PASS, FAIL or SKIP
	title  string
	detail string
}

// service is one demo service process.
type service struct {
	name   string // OTEL_SERVICE_NAME, also the log's name
	module string // demo/services/<module>
	port   int
	agent  bool // -javaagent: weft's Java agent
	env    []string
}

func (d *demo) services() []service {
	backend := fmt.Sprintf("BACKEND_URL=http://127.0.0.1:%d", d.ports.backend)
	return []service{
		{name: "backend", module: "backend", port: d.ports.backend, agent: true},
		{name: "frontend", module: "frontend", port: d.ports.frontend, agent: true, env: []string{backend}},
		{name: "frontend-noagent", module: "frontend", port: d.ports.noagent, env: []string{backend}},
		{name: "jfront", module: "jfront", port: d.ports.jfront, env: []string{backend, "JFRONT_MODE=thread"}},
	}
}

func (d *demo) logPath(name string) string { return filepath.Join(d.dir, "logs", name+".log") }
func (d *demo) profileDir() string         { return filepath.Join(d.dir, "profiles") }
func (d *demo) flameDir() string           { return filepath.Join(d.dir, "flames") }

func (d *demo) run(ctx context.Context) error {
	if err := checkPorts(d.ports); err != nil {
		return err
	}
	if !d.opts.noBuild {
		if err := d.prepare(ctx); err != nil {
			return err
		}
	}
	if err := d.checkArtefacts(); err != nil {
		return err
	}
	d.profiler = d.hasProfiler(ctx)
	if !d.profiler {
		d.log.Warn("this weft has no span profiler (weft run --profile-dir, weft profile --span): flame graphs are skipped")
	}
	// Each run starts from empty logs, profiles and flame graphs.
	for _, sub := range []string{"logs", "profiles", "flames"} {
		p := filepath.Join(d.dir, sub)
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("reset %s: %w", d.rel(p), err)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d.rel(p), err)
		}
	}

	if err := d.startJaeger(ctx); err != nil {
		return err
	}
	pids, err := d.startServices(ctx)
	if err != nil {
		return err
	}
	if err := d.startWeft(ctx, pids); err != nil {
		return err
	}

	eps := endpoints(d.ports)
	d.log.Info("warming up: a few requests to every endpoint, then /cpu until the JIT has compiled the burn loops")
	if err := warmUp(ctx, eps, pids, d.profiler, 90*time.Second); err != nil {
		// Interactive, the traces are still worth showing; the flame
		// graphs may then lack the burn loops' names.
		if d.opts.check || ctx.Err() != nil {
			return err
		}
		d.log.Warn("warm-up incomplete", "err", err)
	}
	// Warm-up spans end up before the first group's window.
	if err := sleep(ctx, 2*time.Second); err != nil {
		return err
	}
	if err := d.alive(); err != nil {
		return err
	}

	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", d.ports.weftMetrics)
	before, err := scrapeRED(ctx, metricsURL)
	if err != nil {
		return err
	}
	runID := randomID()
	d.log.Info("driving traffic", "requests_per_endpoint", d.opts.requests, "endpoints", len(eps))
	groups, err := drive(ctx, eps, d.opts.requests, runID)
	if err != nil {
		return err
	}
	trafficEnd := time.Now()
	verdicts, err := d.collect(ctx, groups)
	if err != nil {
		return err
	}
	// Every span is in Jaeger now, so weft has counted it.
	after, err := scrapeRED(ctx, metricsURL)
	if err != nil {
		return err
	}
	metricsRun := after.since(before)
	if d.profiler {
		// Samples are written per interval: wait for a file that ends after
		// the last request, by when every one of its samples is in a file.
		if err := waitProfiles(ctx, d.profileDir(), trafficEnd.Add(time.Second), 30*time.Second); err != nil {
			if d.opts.check || ctx.Err() != nil {
				return err
			}
			d.log.Warn("flame graphs may be incomplete", "err", err)
		}
	}
	problems := d.report(ctx, verdicts)
	metricsRun.print()
	metricsDiffs := metricsRun.compare(expectedRED(groups))
	if err := d.alive(); err != nil {
		return err
	}

	if d.opts.check {
		if d.child("frontend").logContains("weft-agent: inactive") {
			problems = append(problems, errors.New("the Java agent in frontend says it is inactive; see "+d.rel(d.logPath("frontend"))))
		}
		fmt.Println("\nchecks:")
		for _, v := range verdicts {
			if !v.group.ep.assert {
				continue
			}
			mark := "PASS"
			if !v.ok() {
				mark = "FAIL"
			}
			fmt.Printf("  %s  %-34s %s\n", mark, v.group.ep.title(), v.summary)
		}
		for _, c := range d.flameChecks {
			fmt.Printf("  %s  %-34s %s\n", c.mark, c.title, c.detail)
		}
		mark, detail := "PASS", "every request and call counted once"
		if len(metricsDiffs) > 0 {
			mark, detail = "FAIL", strings.Join(metricsDiffs, "; ")
			problems = append(problems, errors.New("metrics: "+detail))
		}
		fmt.Printf("  %s  %-34s %s\n", mark, "RED metrics and service graph", detail)
		return errors.Join(append([]error{failures(verdicts)}, problems...)...)
	}
	for _, p := range problems {
		d.log.Warn(p.Error())
	}
	for _, m := range metricsDiffs {
		d.log.Warn("metrics: " + m)
	}
	d.footer()
	return d.waitForExit(ctx)
}

// checkPorts fails early, and clearly, when a port is taken.
func checkPorts(p ports) error {
	var busy []string
	for port, what := range p.all() {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			busy = append(busy, fmt.Sprintf("%d (%s)", port, what))
			continue
		}
		l.Close()
	}
	if len(busy) > 0 {
		return fmt.Errorf("ports in use on 127.0.0.1: %s; is another demo running? Pick other ports with -port-base or WEFT_DEMO_PORT_BASE", strings.Join(busy, ", "))
	}
	return nil
}

func (d *demo) add(c *child) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.children = append(d.children, c)
}

func (d *demo) child(name string) *child {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// alive fails when something the demo started has exited.
func (d *demo) alive() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.children {
		if c.exited() {
			return c.exitError()
		}
	}
	return nil
}

func (d *demo) startJaeger(ctx context.Context) error {
	cfg := filepath.Join(d.dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(jaegerConfig(d.ports)), 0o644); err != nil {
		return fmt.Errorf("write Jaeger's configuration: %w", err)
	}
	c, err := startChild("jaeger", d.logPath("jaeger"), syscall.SIGTERM,
		exec.Command(d.jaegerBin(), "--config", "file:"+cfg))
	if err != nil {
		return err
	}
	d.add(c)
	d.jaeger = newJaegerAPI(d.ports.jaegerQuery)
	err = poll(ctx, c, 30*time.Second, func() bool {
		if _, err := d.jaeger.services(ctx); err != nil {
			return false
		}
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", d.ports.jaegerOTLP), time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	if err != nil {
		return fmt.Errorf("Jaeger: %w", err)
	}
	d.log.Info("Jaeger is up", "query_api", d.jaeger.base, "otlp", fmt.Sprintf("127.0.0.1:%d", d.ports.jaegerOTLP), "pid", c.pid())
	return nil
}

// startServices starts the JVMs at once and waits until each answers.
func (d *demo) startServices(ctx context.Context) (map[string]int, error) {
	pids := map[string]int{}
	var started []*child
	for _, s := range d.services() {
		args := []string{"-XX:+PreserveFramePointer", "--enable-native-access=ALL-UNNAMED"}
		if s.agent {
			args = append(args, "-javaagent:"+d.agentJar())
		}
		args = append(args, "-jar", d.serviceJar(s.module))
		cmd := exec.Command(d.opts.java, args...)
		cmd.Dir = d.opts.root
		cmd.Env = append(os.Environ(), "BIND=127.0.0.1", "PORT="+strconv.Itoa(s.port), "OTEL_SERVICE_NAME="+s.name)
		cmd.Env = append(cmd.Env, s.env...)
		c, err := startChild(s.name, d.logPath(s.name), syscall.SIGTERM, cmd)
		if err != nil {
			return nil, err
		}
		d.add(c)
		d.mu.Lock()
		d.jvms = append(d.jvms, c.pid())
		d.mu.Unlock()
		pids[s.name] = c.pid()
		started = append(started, c)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(started))
	for i, s := range d.services() {
		wg.Go(func() {
			url := fmt.Sprintf("http://127.0.0.1:%d/health", s.port)
			errs[i] = poll(ctx, started[i], 90*time.Second, func() bool { return healthy(ctx, url) })
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", s.name, errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, s := range d.services() {
		agent := "without the agent"
		if s.agent {
			agent = "with weft's Java agent"
		}
		d.log.Info("service is up", "service", s.name, "url", fmt.Sprintf("http://127.0.0.1:%d", s.port), "pid", pids[s.name], "jvm", agent)
	}
	return pids, nil
}

func healthy(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startWeft traces exactly the demo's JVMs and waits until weft serves its
// self-metrics, which it does once its programs are attached.
func (d *demo) startWeft(ctx context.Context, pids map[string]int) error {
	var list []string
	for _, s := range d.services() {
		list = append(list, strconv.Itoa(pids[s.name]))
	}
	metrics := fmt.Sprintf("127.0.0.1:%d", d.ports.weftMetrics)
	args := []string{"run",
		"--pid=" + strings.Join(list, ","),
		fmt.Sprintf("--otlp-endpoint=127.0.0.1:%d", d.ports.jaegerOTLP), "--otlp-insecure",
		// The agent goes in by -javaagent where it is wanted; an attach
		// would also load it into frontend-noagent.
		"--java-agent=off",
		"--metrics-addr=" + metrics, "--stats-interval=0", "--log-level=info",
	}
	if d.profiler {
		args = append(args, "--profile=on", "--profile-frequency=99", "--profile-interval=2s",
			"--profile-dir="+d.profileDir())
	}
	c, err := startChild("weft", d.logPath("weft"), syscall.SIGINT, exec.Command(d.opts.weft, args...))
	if err != nil {
		return err
	}
	d.add(c)
	d.log.Info("starting weft", "cmd", d.rel(d.opts.weft)+" "+strings.Join(args, " "))
	err = poll(ctx, c, 60*time.Second, func() bool { return healthy(ctx, "http://"+metrics+"/metrics") })
	if err != nil {
		return fmt.Errorf("weft: %w", err)
	}
	d.log.Info("weft is tracing the four JVMs", "pid", c.pid(), "log", d.rel(d.logPath("weft")))
	return nil
}

// poll waits until ready holds, c exits, ctx ends or timeout passes.
func poll(ctx context.Context, c *child, timeout time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		if ready() {
			return nil
		}
		if c.exited() {
			return c.exitError()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v; the end of %s:\n%s", timeout, c.logPath, c.tail(15))
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// collect waits until every group's spans are in Jaeger, then judges them.
func (d *demo) collect(ctx context.Context, groups []group) ([]verdict, error) {
	d.log.Info("waiting for the spans to reach Jaeger")
	fetch := func() ([][]trace, error) {
		out := make([][]trace, len(groups))
		for i, g := range groups {
			ts, err := d.tracesIn(ctx, g)
			if err != nil {
				return nil, err
			}
			out[i] = ts
		}
		return out, nil
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := fetch()
		if err != nil {
			return nil, err
		}
		missing := 0
		for i, g := range groups {
			missing += max(0, expectedSpans(g)-countSpans(got[i]))
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			d.log.Warn("spans still missing in Jaeger after 30s", "missing", missing)
			break
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
	}
	// Anything that would break a shape (a late span, a stray trace) has
	// had the time of one more export by now.
	if err := sleep(ctx, 1500*time.Millisecond); err != nil {
		return nil, err
	}
	got, err := fetch()
	if err != nil {
		return nil, err
	}
	vs := make([]verdict, len(groups))
	for i, g := range groups {
		vs[i] = judge(g, got[i])
	}
	return vs, nil
}

// tracesIn asks Jaeger for the traces with a span of the group's service,
// or of the backend, that began in the group's window.
func (d *demo) tracesIn(ctx context.Context, g group) ([]trace, error) {
	from, to := g.window()
	seen := map[string]bool{}
	var out []trace
	for _, svc := range []string{g.ep.service, "backend"} {
		ts, err := d.jaeger.search(ctx, svc, from, to)
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			if !seen[t.id] {
				seen[t.id] = true
				out = append(out, t)
			}
		}
		if g.ep.service == "backend" {
			break
		}
	}
	return out, nil
}

// waitProfiles waits for a profile file whose interval ends after after.
func waitProfiles(ctx context.Context, dir string, after time.Time, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		files, err := store.List(dir, after, "")
		if err != nil {
			return err
		}
		if len(files) > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("weft wrote no profile in %s within %v of the last request", dir, timeout)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}

// report prints every group: its trace tree(s) as Jaeger returns them by
// id, and the flame graph of the slowest span. It returns the problems
// with flame graphs the checks must fail on.
func (d *demo) report(ctx context.Context, vs []verdict) []error {
	var problems []error
	for _, v := range vs {
		ep := v.group.ep
		fmt.Printf("\n━━ %s — %s\n", ep.title(), ep.note)
		mark := "✓"
		if !v.ok() {
			mark = "✗"
			if !ep.assert {
				mark = "(not checked)"
			}
		}
		fmt.Printf("   %s %s\n", v.summary, mark)
		if ep.burst > 0 {
			continue
		}
		last := len(v.group.reqs) - 1
		if v.mine[last].id == "" {
			fmt.Printf("   (the last request's trace is not in Jaeger)\n")
			if ep.burn != "" {
				d.flameChecks = append(d.flameChecks, flameCheck{"FAIL", ep.title() + " flame graph", "no trace to take the span from"})
			}
			continue
		}
		shown := []trace{v.mine[last]}
		if ep.want == shapeSplit {
			shown = splitFor(v, last)
		}
		fmt.Printf("   the last request, GET %s:\n", ep.url())
		for i, t := range shown {
			// Re-read by id: the tree is what Jaeger holds for the trace.
			full, err := d.jaeger.trace(ctx, t.id)
			if err != nil {
				problems = append(problems, err)
				continue
			}
			shown[i] = full
			label := "trace"
			if len(shown) > 1 {
				label = fmt.Sprintf("trace %d of %d", i+1, len(shown))
			}
			fmt.Printf("   %s  %s\n%s", label, d.jaeger.traceURL(full.id), indent(renderTree(full), "     ")+"\n")
		}
		if err := d.flameGraph(ctx, ep, shown); err != nil {
			problems = append(problems, err)
		}
	}
	return problems
}

var (
	samplesRe    = regexp.MustCompile(`samples\s+(\d+)`)
	errNoSamples = errors.New("no CPU samples")
)

// flameGraph runs weft profile for the slowest span of the traces shown
// and prints where the flame graph went. Where the endpoint burns CPU in a
// known function, the flame graph must show it.
func (d *demo) flameGraph(ctx context.Context, ep endpoint, ts []trace) error {
	s, ok := slowest(ts)
	if !ok {
		return nil
	}
	what := fmt.Sprintf("%s %s, %s", s.service, s.name, ms(s.dur))
	title := ep.title() + " flame graph"
	fail := func(err error) error {
		if ep.burn != "" {
			d.flameChecks = append(d.flameChecks, flameCheck{"FAIL", title, err.Error()})
		}
		return err
	}
	if !d.profiler {
		fmt.Printf("   flame graph of the slowest span (%s): skipped, this weft has no profiler\n", what)
		if ep.burn != "" {
			d.flameChecks = append(d.flameChecks, flameCheck{"SKIP", title, "this weft has no span profiler (weft profile)"})
		}
		return nil
	}
	prefix := filepath.Join(d.flameDir(), ep.service+"-"+strings.Trim(strings.ReplaceAll(ep.path, "/", "-"), "-"))
	out, err := exec.CommandContext(ctx, d.opts.weft, "profile", "--dir", d.profileDir(), "--span", s.id, "--out", prefix).CombinedOutput()
	switch {
	case err != nil && strings.Contains(string(out), "no samples"):
		why := "it spent its time waiting"
		if burnFunction(ep) != "" {
			why = "its CPU time ran on a thread weft could not tie to the request"
		}
		fmt.Printf("   flame graph of the slowest span (%s): none, no CPU sample carries the span (%s)\n", what, why)
		if ep.burn != "" {
			return fail(fmt.Errorf("%s: %w in span %s, which burns CPU in %s", ep.title(), errNoSamples, s.id, ep.burn))
		}
		return nil
	case err != nil:
		return fail(fmt.Errorf("weft profile --span %s: %w\n%s", s.id, err, out))
	}
	n := "? samples"
	if m := samplesRe.FindSubmatch(out); m != nil {
		n = string(m[1]) + " samples"
		if string(m[1]) == "1" {
			n = "1 sample"
		}
	}
	fmt.Printf("   flame graph of the slowest span (%s): %s.svg (%s)\n", what, d.rel(prefix), n)
	if ep.burn == "" {
		return nil
	}
	svg, err := os.ReadFile(prefix + ".svg")
	if err != nil {
		return fail(fmt.Errorf("%s: flame graph: %w", ep.title(), err))
	}
	if !strings.Contains(string(svg), ep.burn) {
		return fail(fmt.Errorf("%s: the flame graph of span %s (%s.svg) does not show %s", ep.title(), s.id, d.rel(prefix), ep.burn))
	}
	fmt.Printf("   it shows %s ✓\n", ep.burn)
	d.flameChecks = append(d.flameChecks, flameCheck{"PASS", title,
		fmt.Sprintf("%s.svg of span %s (%s, %s) shows %s", d.rel(prefix), s.id, s.name, n, ep.burn)})
	return nil
}

func (d *demo) footer() {
	p := d.ports
	fmt.Printf(`
The demo keeps running; Ctrl-C stops everything it started.
  frontend          http://127.0.0.1:%d/{direct,hop,parallel,shared,cpu}  (with the agent)
  frontend-noagent  http://127.0.0.1:%d/{direct,hop,parallel,shared,cpu}  (the same jar, no agent)
  jfront            http://127.0.0.1:%d/{call,cpu}
  backend           http://127.0.0.1:%d/work
  weft's metrics    http://127.0.0.1:%d/metrics  (RED per service and route, service graph; Prometheus text)
  Jaeger query API  http://127.0.0.1:%d/api/services, /api/traces?service=frontend&limit=5
                    (this Jaeger build has no web UI; OTLP/gRPC on 127.0.0.1:%d)
  any span's flame graph:  %s profile --dir %s --span SPAN_ID
  logs:             %s/
`, p.frontend, p.noagent, p.jfront, p.backend, p.weftMetrics, p.jaegerQuery, p.jaegerOTLP,
		d.rel(d.opts.weft), d.rel(d.profileDir()), d.rel(filepath.Join(d.dir, "logs")))
}

// waitForExit runs until Ctrl-C, or until something the demo started
// exits on its own, which is an error.
func (d *demo) waitForExit(ctx context.Context) error {
	for {
		if err := d.alive(); err != nil {
			return err
		}
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return nil // Ctrl-C
		}
	}
}

// shutdown stops what the demo started: weft first, so that it lets go of
// the services while they still run, then the services, then Jaeger. It
// returns an error only when something is left running.
func (d *demo) shutdown() error {
	d.mu.Lock()
	children := append([]*child(nil), d.children...)
	jvms := append([]int(nil), d.jvms...)
	d.mu.Unlock()
	if len(children) == 0 {
		return nil
	}
	d.log.Info("stopping everything the demo started")
	var errs []error
	stop := func(names ...string) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, c := range children {
			for _, n := range names {
				if c.name == n {
					wg.Go(func() {
						if err := c.stop(15 * time.Second); err != nil {
							mu.Lock()
							errs = append(errs, err)
							mu.Unlock()
						}
					})
				}
			}
		}
		wg.Wait()
	}
	stop("weft")
	stop("backend", "frontend", "frontend-noagent", "jfront")
	stop("jaeger")
	// What the JVMs leave in /tmp for profilers and attachers.
	for _, pid := range jvms {
		for _, f := range []string{"/tmp/perf-%d.map", "/tmp/.java_pid%d", "/tmp/.attach_pid%d", "/tmp/hsperfdata_root/%d"} {
			_ = os.Remove(fmt.Sprintf(f, pid))
		}
	}
	return errors.Join(errs...)
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
