// Command runner is weft's local demo (make demo) and its headless check
// (make demo-test). It builds what is missing, starts Jaeger, the demo
// services and weft on loopback, drives a little traffic through every
// endpoint, and prints each endpoint's trace as Jaeger's query API returns
// it, with the flame graph of its slowest span. Interactive, it then runs
// until Ctrl-C; with -check it asserts the trace shapes instead and exits.
//
// Ports, all on 127.0.0.1, are fixed offsets from -port-base (default
// 19480, or $WEFT_DEMO_PORT_BASE), so that a second copy of the demo, or
// anything else, can be moved out of the way with one number:
//
//	base+0  frontend          Kotlin/Ktor, with weft's Java agent
//	base+1  jfront            plain Java, thread per request, no agent
//	base+2  backend           Kotlin/Ktor, with the agent
//	base+3  frontend-noagent  the frontend's jar without the agent
//	base+5  Jaeger query gRPC
//	base+6  Jaeger query HTTP API (/api/traces, /api/services)
//	base+7  Jaeger OTLP/gRPC receiver (weft exports here)
//	base+9  weft self-metrics
//
// Everything it starts runs in a process group of its own and is stopped
// on exit, on Ctrl-C and on SIGTERM; its files live under .cache/demo/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// options are the runner's flags.
type options struct {
	root     string // repository root
	check    bool   // headless: assert, then exit
	portBase int
	java     string // java launcher for the services
	weft     string // weft binary; empty: bin/weft, built by make build
	noBuild  bool   // take every artefact as it is
	requests int    // sequential requests per endpoint
	verbose  bool
}

const defaultPortBase = 19480

// ports are the demo's listening ports, derived from one base.
type ports struct {
	frontend, jfront, backend, noagent                    int
	jaegerQueryGRPC, jaegerQuery, jaegerOTLP, weftMetrics int
}

func portsFrom(base int) ports {
	return ports{
		frontend: base, jfront: base + 1, backend: base + 2, noagent: base + 3,
		jaegerQueryGRPC: base + 5, jaegerQuery: base + 6, jaegerOTLP: base + 7, weftMetrics: base + 9,
	}
}

// all lists every port with what listens there, for the in-use check.
func (p ports) all() map[int]string {
	return map[int]string{
		p.frontend: "frontend", p.jfront: "jfront", p.backend: "backend", p.noagent: "frontend-noagent",
		p.jaegerQueryGRPC: "Jaeger query gRPC", p.jaegerQuery: "Jaeger query API", p.jaegerOTLP: "Jaeger OTLP",
		p.weftMetrics: "weft metrics",
	}
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			// A terminal demo: the clock adds nothing a reader needs.
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})).With("component", "demo")
	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(2)
	}
	os.Exit(run(opts, log))
}

func parseFlags(args []string) (options, error) {
	o := options{portBase: defaultPortBase, requests: 3}
	if v := os.Getenv("WEFT_DEMO_PORT_BASE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return o, fmt.Errorf("WEFT_DEMO_PORT_BASE=%q: %w", v, err)
		}
		o.portBase = n
	}
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.BoolVar(&o.check, "check", false, "headless: assert the trace shapes through Jaeger's API, stop everything and exit (make demo-test)")
	fs.IntVar(&o.portBase, "port-base", o.portBase, "first of the demo's loopback ports (see the package comment for the layout; env WEFT_DEMO_PORT_BASE)")
	fs.StringVar(&o.java, "java", defaultJava(), "java launcher for the demo services")
	fs.StringVar(&o.weft, "weft", "", "weft binary to run (default: bin/weft, built with make build)")
	fs.BoolVar(&o.noBuild, "no-build", false, "do not build anything: use weft, the agent, the services and Jaeger as they are")
	fs.IntVar(&o.requests, "requests", o.requests, "sequential requests per endpoint")
	fs.BoolVar(&o.verbose, "v", false, "more detail on progress")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %v", fs.Args())
	}
	if o.portBase < 1024 || o.portBase > 65535-9 {
		return o, fmt.Errorf("-port-base %d: want 1024..%d", o.portBase, 65535-9)
	}
	if o.requests < 1 {
		return o, fmt.Errorf("-requests %d: want at least 1", o.requests)
	}
	root, err := findRoot()
	if err != nil {
		return o, err
	}
	o.root = root
	if o.weft == "" {
		o.weft = filepath.Join(root, "bin", "weft")
	} else if o.weft, err = filepath.Abs(o.weft); err != nil {
		return o, fmt.Errorf("-weft: %w", err)
	}
	return o, nil
}

// defaultJava prefers JDK 25, the newest JDK the agent supports, where the
// project's machines have it.
func defaultJava() string {
	const jdk25 = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java"
	if _, err := os.Stat(jdk25); err == nil {
		return jdk25
	}
	return "java"
}

// findRoot walks up from the working directory to weft's go.mod.
func findRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && slices.Contains(strings.Split(string(b), "\n"), "module github.com/weftdev/weft") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run the demo from inside weft's repository (no go.mod of github.com/weftdev/weft above the working directory)")
		}
		dir = parent
	}
}

// run is the whole demo; it returns the exit code.
func run(o options, log *slog.Logger) int {
	if os.Geteuid() != 0 {
		log.Error("weft loads BPF programs: run the demo as root (sudo make demo)")
		return 1
	}
	// The first Ctrl-C cancels ctx and everything stops in order; after it
	// the default action is back, so a second one ends the runner at once
	// (its children then die by their parent-death signal).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()

	d := &demo{opts: o, log: log, ports: portsFrom(o.portBase), dir: filepath.Join(o.root, ".cache", "demo")}
	began := time.Now()
	err := d.run(ctx)
	interrupted := ctx.Err() != nil
	left := d.shutdown()
	if left != nil {
		log.Error("could not stop everything the demo started", "err", left)
		return 1
	}
	switch {
	case interrupted && !o.check:
		// Ctrl-C is how the interactive demo is meant to end.
		fmt.Println("\ndemo: stopped; nothing it started is left running")
		return 0
	case interrupted:
		fmt.Println("\ndemo-test: interrupted")
		return 1
	case err != nil && o.check:
		fmt.Printf("\ndemo-test: FAIL (%s)\n%v\n", time.Since(began).Round(time.Second), err)
		return 1
	case err != nil:
		log.Error("demo failed", "err", err)
		return 1
	case o.check:
		fmt.Printf("\ndemo-test: PASS (%s)\n", time.Since(began).Round(time.Second))
	}
	return 0
}
