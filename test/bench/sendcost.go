package main

import (
	"bytes"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weftdev/weft/test/bench/floor"
)

var (
	sendCost     = flag.Bool("send-cost", false, "measure the CPU a sender spends per request, weft off / propagation off / on (-modes), on pinned CPUs")
	sendRequests = flag.Int("send-requests", 30000, "requests per -send-cost run")
	sendNewConn  = flag.Bool("send-new-conn", false, "with -send-cost: a fresh connection per request instead of one kept alive")
)

// runSendCost isolates what injection costs the process that sends: one
// thread sends requests back to back over one kept-alive connection,
// pinned to CPU 0, to a net/http server pinned to CPU 1 with weft; the
// sender's own CPU per request is compared across modes, paired by round.
// (The sk_msg program and the kernel's sockmap send path run in the
// sender's send call; on loopback the receiving half of TCP does too.)
func runSendCost() {
	srvBin, done := prepare("./test/e2e/testdata/websrv")
	defer done()
	backend, addr := startServer("taskset", "-c", "1", srvBin, "-mode=nethttp", "-addr=127.0.0.1:0")
	defer backend.Process.Kill()
	otlp := startSink()
	order := strings.Split(*modes, ",")
	perMode, cpu0 := map[string][]float64{}, map[string][]float64{}
	sendOnce(srvBin, addr, backend.Process.Pid, "off", otlp) // warm-up
	for i := 0; i < *rounds; i++ {
		for _, m := range rotated(order, i) {
			us, c0 := sendOnce(srvBin, addr, backend.Process.Pid, m, otlp)
			log.Printf("%s: %.2f µs of sender CPU, %.2f µs of CPU 0 per request", m, us, c0)
			perMode[m] = append(perMode[m], us)
			cpu0[m] = append(cpu0[m], c0)
		}
	}
	conn := "one kept-alive connection"
	if *sendNewConn {
		conn = "a fresh connection per request"
	}
	fmt.Printf("%s, %d requests per run, %d rounds; mean ± standard error:\n\n", conn, *sendRequests, *rounds)
	printPaired("Sender CPU per request", "request", order, perMode)
	printPaired("CPU 0 busy per request", "request", order, cpu0)
}

// prepare builds pkg into a temporary directory and turns the kernel's
// BPF statistics on; done undoes both.
func prepare(pkg string) (bin string, done func()) {
	dir, err := os.MkdirTemp("", "weft-bench-")
	check(err)
	bin = filepath.Join(dir, filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		log.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
	check(os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("1"), 0o644))
	return bin, func() {
		os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("0"), 0o644)
		os.RemoveAll(dir)
	}
}

// printPaired prints the modes' means and their differences, paired by
// round, from the first mode, then injection alone (on − noprop) and the
// kernel's sockmap path alone (floor − off) where those modes ran.
func printPaired(title, unit string, order []string, perMode map[string][]float64) {
	fmt.Printf("%s (µs):\n\n", title)
	fmt.Println("| mode | µs per " + unit + " | vs " + order[0] + ", paired by round |")
	fmt.Println("|---|---|---|")
	for _, m := range order {
		mean, se := meanSE(perMode[m])
		var diff []float64
		for i, v := range perMode[m] {
			diff = append(diff, v-perMode[order[0]][i])
		}
		dm, dse := meanSE(diff)
		fmt.Printf("| %s | %.2f ± %.2f | %+.2f ± %.2f |\n", m, mean, se, dm, dse)
	}
	fmt.Println()
	// Injection alone, and the kernel's sockmap path alone.
	for _, p := range [][2]string{{"on", "noprop"}, {"floor", "off"}} {
		a, b := perMode[p[0]], perMode[p[1]]
		if a == nil || b == nil {
			continue
		}
		var diff []float64
		for i := range a {
			diff = append(diff, a[i]-b[i])
		}
		dm, dse := meanSE(diff)
		fmt.Printf("%s − %s, paired by round: %+.2f ± %.2f µs per request\n", p[0], p[1], dm, dse)
	}
	fmt.Println()
}

// sendOnce runs one sender, traced by weft in mode (none when off), and
// returns its CPU time per request and CPU 0's busy time per request
// (the sender's and whatever else ran there for it: kernel workers,
// interrupts), in µs.
func sendOnce(srvBin, addr string, backendPid int, mode, otlp string) (sender, cpu0 float64) {
	s := exec.Command("taskset", "-c", "0", srvBin, "-mode=sender", "-downstream="+addr, "-downstream-path=/hello",
		"-requests="+strconv.Itoa(*sendRequests), "-downstream-keepalive="+strconv.FormatBool(!*sendNewConn))
	stdin, err := s.StdinPipe()
	check(err)
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	orphanless(s)
	check(s.Start())
	var w *exec.Cmd
	var before map[string]progStat
	if mode == "floor" {
		// No weft: the sender's connections go through a sockhash whose
		// sk_msg program passes every byte, the least injection costs.
		fl, err := floor.Attach("weft-bench-floor")
		check(err)
		defer func() { check(fl.Close()) }()
		check(fl.Enter(s.Process.Pid))
	} else if mode != "off" {
		w, _ = startWeft(mode, []int{backendPid, s.Process.Pid}, otlp, "taskset", "-c", "1")
		defer func() {
			w.Process.Signal(os.Interrupt)
			w.Wait()
		}()
		before = progStats(w.Process.Pid)
	}
	busy0 := cpuBusy(0)
	_, err = stdin.Write([]byte("go\n"))
	check(err)
	if err := s.Wait(); err != nil {
		log.Fatalf("sender: %v\n%s", err, out.String())
	}
	cpu0 = (cpuBusy(0) - busy0) / float64(*sendRequests)
	if w != nil {
		// The sender alone runs on CPU 0, so nothing preempts its BPF
		// programs and their run times are their own.
		after := progStats(w.Process.Pid)
		for _, name := range []string{"weft_inject", "weft_sockops"} {
			a, b := after[name], before[name]
			if n := a.runCnt - b.runCnt; n > 0 {
				log.Printf("%s: %s %d calls, %.0f ns per call", mode, name, n, float64(a.runNs-b.runNs)/float64(n))
			}
		}
	}
	var user, sys float64
	if _, err := fmt.Sscanf(out.String(), "%f %f", &user, &sys); err != nil {
		log.Fatalf("sender output %q: %v", out.String(), err)
	}
	return user + sys, cpu0
}

// cpuBusy is the time CPU n has spent on anything but idling (or being
// stolen by the hypervisor) since boot, in µs, at the kernel's 10 ms
// tick resolution.
func cpuBusy(n int) float64 {
	b, err := os.ReadFile("/proc/stat")
	check(err)
	prefix := fmt.Sprintf("cpu%d ", n)
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		f := strings.Fields(line)
		var ticks float64
		for _, i := range []int{1, 2, 3, 6, 7} { // user nice system irq softirq
			v, err := strconv.ParseFloat(f[i], 64)
			check(err)
			ticks += v
		}
		return ticks * 1e6 / 100 // USER_HZ
	}
	log.Fatalf("no %q line in /proc/stat", prefix)
	return 0
}
