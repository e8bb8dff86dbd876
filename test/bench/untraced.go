package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

var (
	untracedWrite  = flag.Bool("untraced-write", false, "time a 1-byte write(2) to /dev/null by a process weft does not trace, with weft (-modes: off, on, syscalls, ...) tracing a server")
	untracedWrites = flag.Int("untraced-writes", 2_000_000, "writes per -untraced-write run")
)

// runUntracedWrite measures what weft costs the processes it does not
// trace: this process, which weft is not told about, times write(2)s of
// one byte to /dev/null while weft traces a server, mode by mode, paired
// by round. A syscall tracepoint puts every task on the slow system-call
// path; the socket-only hooks should leave these writes alone.
func runUntracedWrite() {
	srvBin, done := prepare("./test/e2e/testdata/websrv")
	defer done()
	srv, _ := startServer(srvBin, "-mode=nethttp", "-addr=127.0.0.1:0")
	defer srv.Process.Kill()
	otlp := startSink()
	devnull, err := os.OpenFile("/dev/null", os.O_WRONLY, 0)
	check(err)
	defer devnull.Close()
	order := strings.Split(*modes, ",")
	perMode := map[string][]float64{}
	timeWrites(devnull.Fd(), *untracedWrites/4) // warm-up
	for i := 0; i < *rounds; i++ {
		for _, m := range rotated(order, i) {
			ns := untracedOnce(m, srv.Process.Pid, otlp, devnull.Fd())
			log.Printf("%s: %.1f ns per write", m, ns)
			perMode[m] = append(perMode[m], ns)
		}
	}
	fmt.Printf("%d one-byte writes to /dev/null per run by a process weft does not trace, %d rounds; mean ± standard error:\n\n", *untracedWrites, *rounds)
	printRatios("ns per write", "%.1f", order, perMode)
}

func untracedOnce(mode string, serverPid int, otlp string, fd uintptr) float64 {
	if mode != "off" {
		w, _ := startWeft(mode, []int{serverPid}, otlp)
		defer func() {
			w.Process.Signal(os.Interrupt)
			w.Wait()
		}()
	}
	return timeWrites(fd, *untracedWrites)
}

// timeWrites makes n raw write(2) calls of one byte and returns the mean
// wall time of one, in ns.
func timeWrites(fd uintptr, n int) float64 {
	b := []byte{'x'}
	p := uintptr(unsafe.Pointer(&b[0]))
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, p, 1); e != 0 {
			log.Fatalf("write /dev/null: %v", e)
		}
	}
	elapsed := time.Since(start)
	runtime.KeepAlive(b)
	return float64(elapsed.Nanoseconds()) / float64(n)
}
