// Package e2e drives real traffic through weft's kernel hooks: it builds
// the weft binary and the test servers, runs them, and checks the spans
// an in-test OTLP receiver gets.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
	"github.com/weftdev/weft/pkg/metrics"
	"github.com/weftdev/weft/pkg/testenv"
)

var bins struct {
	once   sync.Once
	dir    string
	weft   string
	websr  string
	client string
	h2app  string
	// h2appGRPC181 is h2app built against grpc-go 1.81 (grpc181Mod).
	h2appGRPC181 string
	err          error
}

// grpc181Mod is the go.mod h2app is built with against grpc-go 1.81.
const grpc181Mod = "test/e2e/testdata/h2app/grpc-1.81.mod"

// build compiles weft and the test server once per test binary, or takes
// them from WEFT_E2E_BIN_DIR (inside a QEMU guest there is no Go toolchain).
func build(t *testing.T) {
	t.Helper()
	bins.once.Do(func() {
		if dir := os.Getenv("WEFT_E2E_BIN_DIR"); dir != "" {
			bins.weft = filepath.Join(dir, "weft")
			bins.websr = filepath.Join(dir, "websrv")
			bins.client = filepath.Join(dir, "rawclient")
			bins.h2app = filepath.Join(dir, "h2app")
			bins.h2appGRPC181 = filepath.Join(dir, "h2app-grpc-1.81")
			return
		}
		bins.dir, bins.err = sharedTempDir("weft-e2e-")
		if bins.err != nil {
			return
		}
		root := repoRoot()
		bins.weft = filepath.Join(bins.dir, "weft")
		bins.websr = filepath.Join(bins.dir, "websrv")
		bins.client = filepath.Join(bins.dir, "rawclient")
		bins.h2app = filepath.Join(bins.dir, "h2app")
		bins.h2appGRPC181 = filepath.Join(bins.dir, "h2app-grpc-1.81")
		for out, pkg := range map[string]string{bins.weft: "./cmd/weft", bins.websr: "./test/e2e/testdata/websrv",
			bins.client: "./test/e2e/testdata/rawclient", bins.h2app: "./test/e2e/testdata/h2app",
			bins.h2appGRPC181: "./test/e2e/testdata/h2app"} {
			cmd := exec.Command("go", "build", "-o", out, pkg)
			if pkg == "./test/e2e/testdata/h2app" {
				// Stripped, as production Go binaries often are: its
				// functions come from the Go table (TestTLSGo).
				cmd.Args = append(cmd.Args[:2], "-ldflags=-s -w", "-o", out, pkg)
			}
			if out == bins.h2appGRPC181 {
				cmd.Args = append(cmd.Args[:2], append([]string{"-modfile=" + grpc181Mod}, cmd.Args[2:]...)...)
			}
			cmd.Dir = root
			if b, err := cmd.CombinedOutput(); err != nil {
				bins.err = fmt.Errorf("build %s: %v\n%s", pkg, err, b)
				return
			}
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
}

func repoRoot() string {
	wd, _ := os.Getwd()
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, dir := range sharedDirs.paths {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// sharedDirs are the temporary directories of what the tests build once
// and share (binaries, scripts, environments): TestMain removes them.
var sharedDirs struct {
	sync.Mutex
	paths []string
}

func sharedTempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err == nil {
		sharedDirs.Lock()
		sharedDirs.paths = append(sharedDirs.paths, dir)
		sharedDirs.Unlock()
	}
	return dir, err
}

// setup gates a test on privileges and builds the binaries.
func setup(t *testing.T) {
	t.Helper()
	testenv.RequirePrivileged(t)
	build(t)
}

// proc is a child process whose output is kept for failure messages.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	done chan struct{}
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Pid of the process.
func (p *proc) Pid() int { return p.cmd.Process.Pid }

// Alive reports whether the process has not exited.
func (p *proc) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func start(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(name, args...), done: make(chan struct{})}
	orphanless(p.cmd)
	p.cmd.Stdout = p
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.stop() })
	return p
}

// orphanless has the kernel kill cmd if the test binary dies first (a
// test timeout panics past every cleanup): a weft left running would keep
// its programs attached and skew the next run's host-wide checks.
func orphanless(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}

func (p *proc) stop() {
	if p.Alive() {
		p.cmd.Process.Signal(os.Interrupt)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// startServer runs websrv and returns it with its address.
func startServer(t *testing.T, args ...string) (*proc, string) {
	t.Helper()
	return startListener(t, exec.Command(bins.websr, args...))
}

// startListener runs a server that prints its address as its first line.
func startListener(t *testing.T, cmd *exec.Cmd) (*proc, string) {
	t.Helper()
	p := &proc{cmd: cmd, done: make(chan struct{})}
	orphanless(cmd)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("%v: no address: %v %s", cmd.Args, err, p.Output())
	}
	go io.Copy(io.Discard, stdout)
	return p, strings.TrimSpace(line)
}

// weft is a running weft with its self-metrics endpoint.
type weft struct {
	*proc
	metrics string
}

// exportDelay is the batch delay the tests give weft (--otlp-batch-delay).
// A span reaches the receiver within a drain of the ring buffer (every
// 200 ms) and one batch delay of the event that ended it: waits for spans
// that must not come (extras, a quiet receiver) last exportLag.
const (
	exportDelay = 200 * time.Millisecond
	exportLag   = 200*time.Millisecond + exportDelay + 400*time.Millisecond
)

// startWeft runs weft exporting to rcv and waits until it is attached.
func startWeft(t *testing.T, rcv *otlptest.Receiver, args ...string) *weft {
	t.Helper()
	port := freePort(t)
	probes := os.Getenv("WEFT_E2E_PROBES") // the QEMU tests force kprobe
	if probes == "" {
		probes = "auto"
	}
	base := []string{"run", "--probes=" + probes, "--otlp-insecure", "--metrics-addr=127.0.0.1:" + strconv.Itoa(port),
		"--stats-interval=0", "--log-level=debug", "--otlp-batch-delay=" + exportDelay.String()}
	if rcv != nil {
		base = append(base, "--otlp-endpoint="+rcv.Endpoint())
	}
	w := &weft{proc: start(t, bins.weft, append(base, args...)...), metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port)}
	// A hang guard, not a speed bound: weft is ready in about a second
	// here, but in a QEMU guest under software emulation, beside the
	// host's own test load, verifying its programs took 22 s and reading
	// four Go binaries' DWARF 6 s more (6.1, 2026-12-06).
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if !w.Alive() {
			t.Fatalf("weft exited:\n%s", w.Output())
		}
		// The attached line precedes the metrics server; its copy from
		// weft's pipe may lag, so both are waited for.
		if attached := attachedLine(w.Output()); attached != "" {
			if _, err := w.Metrics(); err == nil {
				t.Logf("weft: %s", attached)
				if probes != "auto" && !strings.Contains(attached, " path="+probes+" ") {
					t.Fatalf("weft attached on another path than --probes=%s: %s", probes, attached)
				}
				return w
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("weft not ready after 2m:\n%s", w.Output())
	return nil
}

// attachedLine is weft's log line that says which path it attached on.
func attachedLine(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "msg=attached") {
			return line
		}
	}
	return ""
}

// Metrics reads weft's self-metrics.
func (w *weft) Metrics() (map[string]uint64, error) {
	resp, err := http.Get(w.metrics)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	mfs, err := metrics.ParseText(resp.Body)
	if err != nil {
		return nil, err
	}
	return metrics.SelfMetrics(mfs), nil
}

// freePort returns a port of 127.0.0.1 that nothing uses now, for a
// server that binds it later. It is taken below the kernel's ephemeral
// range: a port from that range, free when looked at, can become the local
// port of any connection made before the server binds it (a JVM takes
// seconds to), and the suites running side by side make many.
func freePort(t *testing.T) int {
	t.Helper()
	low := ephemeralLow(t)
	for range 1000 {
		port := freePortFloor + rand.IntN(low-freePortFloor)
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue // in use
		}
		l.Close()
		return port
	}
	t.Fatalf("no free port in [%d, %d)", freePortFloor, low)
	return 0
}

// freePortFloor: freePort's ports start here, above the well-known
// services' and the registered ones most hosts run.
const freePortFloor = 10000

// ephemeralLow is where the kernel's range of ports it picks for
// connections and port-0 binds begins.
func ephemeralLow(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("ephemeral port range %q", b)
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= freePortFloor+1000 {
		t.Fatalf("ephemeral port range %q: no room below it", b)
	}
	return low
}

// userAgent identifies the Go client requests of the tests.
const userAgent = "weft-e2e/1"

// get makes one request with a fresh connection and returns the body. It is
// used where a test must also run inside a QEMU guest, which has no curl.
func get(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Close = true
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(b)
}

// curl runs curl and returns its stdout.
func curl(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "curl", append([]string{"-sS"}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	return string(out)
}

// listening reports whether a connection to port succeeds, and closes it:
// a connection left open holds the server (an nginx worker waits out its
// client_header_timeout before a reload lets it exit).
func listening(port int) bool {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
