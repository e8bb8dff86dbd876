package main

import (
	"flag"
	"fmt"
	"log"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/pprof/profile"
)

// The profiling modes: weft on (propagation included, as "on") with the
// profiler at 19 or 99 Hz. Compared with "on" in the same run they give
// what profiling costs: weft's extra CPU, the BPF sampler's run time and
// the traced service's throughput.
var urlPath = flag.String("path", "/hello", "path the load requests, e.g. /burn?ms=20 for a CPU-bound service")

// profDirs are the profile directories of the runs, removed at the end.
var profDirs []string

// profileArgs are weft's extra flags for a mode "prof<Hz>"; none for the
// others.
func profileArgs(mode string) []string {
	hz, ok := strings.CutPrefix(mode, "prof")
	if !ok {
		return nil
	}
	if _, err := strconv.Atoi(hz); err != nil {
		log.Fatalf("mode %s: want prof<Hz>, e.g. prof19", mode)
	}
	dir, err := os.MkdirTemp("", "weft-bench-profiles-")
	check(err)
	profDirs = append(profDirs, dir)
	// Files every 5 s: a run writes a few, so their cost is in the figures.
	return []string{"--profile=on", "--profile-frequency=" + hz, "--profile-interval=5s", "--profile-dir=" + dir}
}

// profilerFrames mark weft's profiling code in its CPU profile: the
// sample reader and aggregator goroutines, the perf-map refresher, the
// span hold on the way to the exporter, the CPU hot-plug watcher.
var profilerFrames = []string{
	"github.com/weftdev/weft/pkg/agent.startProfiling",
	"github.com/weftdev/weft/pkg/agent.(*profiling)",
	"github.com/weftdev/weft/pkg/agent.(*perfMapRefresher)",
	"github.com/weftdev/weft/pkg/agent.(*jitWait)",
	"github.com/weftdev/weft/pkg/agent.(*linkedExporter)",
	"github.com/weftdev/weft/pkg/agent.newLinkedExporter",
	"github.com/weftdev/weft/pkg/tracer.(*Sampler)",
}

// exportFrames are span export, which the hold passes spans on to: tracing
// work, done with or without profiling.
var exportFrames = []string{
	"github.com/weftdev/weft/pkg/export.(*OTLP).Export",
	"github.com/weftdev/weft/pkg/export.(*Console).Export",
}

// startProfilerCPU takes weft's CPU profile for the run of a profiling
// mode and returns a function that waits for it and gives the CPU spent
// in profiling code, per second. GC is left out: it cannot be told apart.
// Its own result is 0 for other modes, and when -cpuprofile has weft's
// profiler (one CPU profile at a time).
func startProfilerCPU(metricsURL, mode string) func() float64 {
	if !strings.HasPrefix(mode, "prof") || *cpuProf != "" {
		return func() float64 { return 0 }
	}
	secs := max(int(*duration/time.Second)-2, 1)
	ch := make(chan float64, 1)
	go func() {
		url := strings.TrimSuffix(metricsURL, "/metrics") + "/debug/pprof/profile?seconds=" + strconv.Itoa(secs)
		resp, err := http.Get(url)
		check(err)
		defer resp.Body.Close()
		p, err := profile.Parse(resp.Body)
		check(err)
		ci := len(p.SampleType) - 1 // cpu/nanoseconds comes last
		var ns int64
		for _, s := range p.Sample {
			if hasFrame(s, profilerFrames) && !hasFrame(s, exportFrames) {
				ns += s.Value[ci]
			}
		}
		ch <- float64(ns) / 1e9 / float64(secs)
	}()
	return func() float64 { return <-ch }
}

func hasFrame(s *profile.Sample, prefixes []string) bool {
	for _, l := range s.Location {
		for _, ln := range l.Line {
			for _, p := range prefixes {
				if ln.Function != nil && strings.HasPrefix(ln.Function.Name, p) {
					return true
				}
			}
		}
	}
	return false
}

func removeProfDirs() {
	for _, d := range profDirs {
		os.RemoveAll(d)
	}
}

// reportProfiling compares each profiling mode with "on" (tracing without
// profiling): the host CPU profiling takes, as a share of one core, and the
// service's throughput.
func reportProfiling(runs []run, order []string) {
	var modes []string
	for _, m := range order {
		if strings.HasPrefix(m, "prof") {
			modes = append(modes, m)
		}
	}
	if len(modes) == 0 {
		return
	}
	by := map[string][]run{}
	for _, r := range runs {
		by[r.mode] = append(by[r.mode], r)
	}
	if len(by["on"]) == 0 {
		log.Printf("profiling report needs the mode \"on\" as the baseline")
		return
	}
	secs := duration.Seconds()
	mean := func(rs []run, f func(run) float64) float64 {
		var s float64
		for _, r := range rs {
			s += f(r)
		}
		return s / float64(len(rs))
	}
	weftPerSec := func(r run) float64 { return r.weftCPU.Seconds() / secs }
	samplerPerSec := func(r run) float64 { return float64(r.progStats["weft_sample"].runNs) / 1e9 / secs }
	samplesPerSec := func(r run) float64 { return float64(r.profSamples) / secs }
	rps := func(r run) float64 { return r.reqPerSec }
	profCPU := func(r run) float64 { return r.profCPU }
	base := by["on"]

	fmt.Printf("\nProfiling against weft on without it (%s, %d rounds of %v):\n\n", *urlPath, *rounds, *duration)
	fmt.Printf("| | weft on |")
	for _, m := range modes {
		fmt.Printf(" %s |", m)
	}
	fmt.Printf("\n|---|---|%s\n", strings.Repeat("---|", len(modes)))
	row := func(name string, f func(string) string) {
		fmt.Printf("| %s | %s |", name, f("on"))
		for _, m := range modes {
			fmt.Printf(" %s |", f(m))
		}
		fmt.Println()
	}
	row("throughput", func(m string) string { return fmt.Sprintf("%.1f req/s", mean(by[m], rps)) })
	row("throughput / weft on", func(m string) string { return fmt.Sprintf("%.4f", mean(by[m], rps)/mean(base, rps)) })
	// Each round runs every mode once: the ratio within a round pairs
	// runs made minutes apart, and the spread of those ratios says how
	// far the mean can be trusted.
	row("throughput / weft on, paired by round: mean ± standard error", func(m string) string {
		if m == "on" {
			return "–"
		}
		base := map[int]float64{}
		for _, r := range by["on"] {
			base[r.round] = r.reqPerSec
		}
		var ratios []float64
		for _, r := range by[m] {
			if b := base[r.round]; b > 0 {
				ratios = append(ratios, r.reqPerSec/b)
			}
		}
		mu, se := meanSE(ratios)
		return fmt.Sprintf("%.4f ± %.4f", mu, se)
	})
	row("samples read per second", func(m string) string { return fmt.Sprintf("%.0f", mean(by[m], samplesPerSec)) })
	row("spans passed on without a hold", func(m string) string {
		if m == "on" {
			return "–"
		}
		var unheld, spans float64
		for _, r := range by[m] {
			unheld += float64(r.unheld)
			spans += float64(r.spans)
		}
		return fmt.Sprintf("%.1f %%", 100*unheld/max(spans, 1))
	})
	row("weft CPU, % of one core", func(m string) string { return fmt.Sprintf("%.2f %%", 100*mean(by[m], weftPerSec)) })
	row("BPF sampler, % of one core", func(m string) string { return fmt.Sprintf("%.3f %%", 100*mean(by[m], samplerPerSec)) })
	row("weft CPU in profiling code (its CPU profile), % of one core", func(m string) string {
		return fmt.Sprintf("%.3f %%", 100*mean(by[m], profCPU))
	})
	row("profiling (profiling code + BPF sampler), % of one core", func(m string) string {
		if m == "on" {
			return "–"
		}
		return fmt.Sprintf("**%.2f %%**", 100*(mean(by[m], profCPU)+mean(by[m], samplerPerSec)))
	})
	row("weft CPU difference to weft on (noisy), % of one core", func(m string) string {
		if m == "on" {
			return "–"
		}
		return fmt.Sprintf("%+.2f %%", 100*(mean(by[m], weftPerSec)-mean(base, weftPerSec)))
	})
	var perSample []string
	for _, m := range modes {
		if n := mean(by[m], samplesPerSec); n > 0 {
			perSample = append(perSample, fmt.Sprintf("%s %.1f µs", m, 1e6*mean(by[m], profCPU)/n))
		}
	}
	fmt.Printf("\nweft's profiling code per sample read: %s.\n", strings.Join(perSample, ", "))
}

// meanSE is the mean of xs and its standard error.
func meanSE(xs []float64) (mean, se float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1) / float64(len(xs)))
}
