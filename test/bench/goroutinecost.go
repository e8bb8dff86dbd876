package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

var (
	goroutineCost = flag.Bool("goroutine-cost", false, "measure the CPU a Go program spends per goroutine it creates, traced by weft with runtime hooks off and on (-modes), on a pinned CPU")
	goroutines    = flag.Int("goroutines", 2000000, "goroutines created per -goroutine-cost run")
	spawnerGo     = flag.String("spawner-go", "", "with -goroutine-cost: the Go release that builds the spawner (GOTOOLCHAIN, e.g. go1.23.12); default this machine's go")
)

// runGoroutineCost isolates what the goroutine-creation probe costs the
// traced program: one Go program (GOMAXPROCS=1, pinned to CPU 0) creates
// goroutines back to back while weft (on CPU 1) traces it; its CPU per
// goroutine is compared across modes, paired by round.
func runGoroutineCost() {
	bin, done := prepare("./test/bench/spawner")
	defer done()
	if *spawnerGo != "" {
		bin = buildWithGo(*spawnerGo, "test/bench/spawner/main.go", filepath.Dir(bin))
	}
	s := exec.Command("taskset", "-c", "0", bin)
	s.Env = append(os.Environ(), "GOMAXPROCS=1")
	orphanless(s)
	stdin, err := s.StdinPipe()
	check(err)
	stdout, err := s.StdoutPipe()
	check(err)
	s.Stderr = os.Stderr
	check(s.Start())
	defer s.Process.Kill()
	replies := bufio.NewReader(stdout)
	spawn := func() float64 {
		before := cpuTime(s.Process.Pid)
		_, err := io.WriteString(stdin, strconv.Itoa(*goroutines)+"\n")
		check(err)
		line, err := replies.ReadString('\n')
		check(err)
		if strings.TrimSpace(line) != "ok" {
			log.Fatalf("spawner: %q", line)
		}
		return float64((cpuTime(s.Process.Pid) - before).Nanoseconds()) / 1e3 / float64(*goroutines)
	}
	otlp := startSink()
	spawn() // warm-up
	order := strings.Split(*modes, ",")
	perMode := map[string][]float64{}
	for i := 0; i < *rounds; i++ {
		for _, m := range rotated(order, i) {
			var w *exec.Cmd
			var before map[string]progStat
			if m != "off" {
				w, _ = startWeft(m, []int{s.Process.Pid}, otlp, "taskset", "-c", "1")
				before = progStats(w.Process.Pid)
			}
			us := spawn()
			if w != nil {
				after := progStats(w.Process.Pid)
				for _, name := range []string{"weft_go_newproc1_casg", "weft_go_newproc1_ret"} {
					if n := after[name].runCnt - before[name].runCnt; n > 0 {
						log.Printf("%s: %s %d calls, %.0f ns per call", m, name, n, float64(after[name].runNs-before[name].runNs)/float64(n))
					}
				}
				w.Process.Signal(os.Interrupt)
				w.Wait()
			}
			log.Printf("%s: %.3f µs of CPU per goroutine created", m, us)
			perMode[m] = append(perMode[m], us)
		}
	}
	fmt.Printf("%d goroutines per run, %d rounds; mean ± standard error:\n\n", *goroutines, *rounds)
	printPaired("Spawner CPU per goroutine created", "goroutine", order, perMode)
}

// buildWithGo builds the one-file program src with Go release release, in
// a module of its own under dir (the weft module needs a newer Go).
func buildWithGo(release, src, dir string) string {
	mod := filepath.Join(dir, "spawner-"+release)
	check(os.MkdirAll(mod, 0o755))
	code, err := os.ReadFile(src)
	check(err)
	check(os.WriteFile(filepath.Join(mod, "main.go"), code, 0o644))
	check(os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module spawner\n\ngo 1.21\n"), 0o644))
	bin := filepath.Join(mod, "spawner")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOTOOLCHAIN="+release)
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Fatalf("build the spawner with %s: %v\n%s", release, err, out)
	}
	return bin
}
