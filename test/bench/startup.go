package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"
)

var startup = flag.Bool("startup", false, "time weft's start-up, from its exec until its metrics endpoint answers (programs loaded and attached, the traced server set up), tracing a Go server (-modes: on, base, ...)")

// runStartup times weft's start-up mode by mode, paired by round: most of
// it is the kernel verifying weft's programs.
func runStartup() {
	srvBin, done := prepare("./test/e2e/testdata/websrv")
	defer done()
	srv, _ := startServer(srvBin, "-mode=nethttp", "-addr=127.0.0.1:0")
	defer srv.Process.Kill()
	otlp := startSink()
	order := strings.Split(*modes, ",")
	perMode := map[string][]float64{}
	for i := 0; i < *rounds; i++ {
		for _, m := range rotated(order, i) {
			start := time.Now()
			w, _ := startWeft(m, []int{srv.Process.Pid}, otlp)
			ms := float64(time.Since(start).Microseconds()) / 1000
			w.Process.Signal(os.Interrupt)
			w.Wait()
			log.Printf("%s: ready in %.0f ms", m, ms)
			perMode[m] = append(perMode[m], ms)
		}
	}
	fmt.Printf("weft's start-up, exec to metrics endpoint, %d rounds; mean ± standard error:\n\n", *rounds)
	printRatios("ms", "%.0f", order, perMode)
}
