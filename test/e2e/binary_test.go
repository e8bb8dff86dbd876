package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

// Binary protocols pass through weft untouched, with propagation on: Redis
// under redis-benchmark and PostgreSQL under pgbench give the same results
// with weft as without, and a Redis value that looks like an HTTP request
// comes back byte for byte.
func TestBinaryProtocolsUntouched(t *testing.T) {
	setup(t)
	redisPort := freePort(t)
	redis := start(t, "redis-server", "--port", strconv.Itoa(redisPort), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	waitListening(t, redisPort)
	pgPort := freePort(t)
	pg := startPostgres(t, pgPort)

	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	pgArgs := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(pgPort), "-U", "postgres"}
	run("pgbench", append(pgArgs, "-i", "-s", "1", "-q", "postgres")...)

	const tricky = "GET / HTTP/1.1\r\nHost: x\r\n\r\n\x00\xff binary"
	workload := func() (redisOK int, pgProcessed string) {
		out := run("redis-benchmark", "-h", "127.0.0.1", "-p", strconv.Itoa(redisPort), "-n", "5000", "-q", "-t", "set,get,lpush,lpop", "-c", "10")
		if strings.Contains(out, "ERR") || strings.Contains(strings.ToLower(out), "error") {
			t.Fatalf("redis-benchmark reported errors:\n%s", out)
		}
		redisOK = strings.Count(out, "requests per second")
		set := exec.Command("redis-cli", "-p", strconv.Itoa(redisPort), "-x", "SET", "tricky")
		set.Stdin = strings.NewReader(tricky)
		if out, err := set.CombinedOutput(); err != nil || !strings.Contains(string(out), "OK") {
			t.Fatalf("redis SET: %v %s", err, out)
		}
		if got := run("redis-cli", "-p", strconv.Itoa(redisPort), "--raw", "GET", "tricky"); strings.TrimSuffix(got, "\n") != tricky {
			t.Fatalf("value changed in transit: %q", got)
		}
		out = run("pgbench", append(pgArgs, "-c", "4", "-j", "2", "-t", "200", "postgres")...)
		if m := regexp.MustCompile(`number of failed transactions: (\d+)`).FindStringSubmatch(out); m != nil && m[1] != "0" {
			t.Fatalf("pgbench failed transactions:\n%s", out)
		}
		m := regexp.MustCompile(`number of transactions actually processed: (\S+)`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("cannot read pgbench output:\n%s", out)
		}
		return redisOK, m[1]
	}
	r0, p0 := workload()
	w := startWeft(t, otlptest.Start(t), fmt.Sprintf("--pid=%d,%d", redis.Pid(), pg.Pid()), "--exe=(redis-benchmark|redis-cli|pgbench)$")
	r1, p1 := workload()
	if r0 != r1 || p0 != p1 || p1 != "800/800" {
		t.Fatalf("results differ with weft: redis %d/%d tests, pgbench %s vs %s", r1, r0, p1, p0)
	}
	m, _ := w.Metrics()
	if m["conns_not_http"] == 0 {
		t.Errorf("weft saw no binary connection (not traced?): %v", m)
	}
	// The clients' connections left the injection sockhash after their
	// first bytes (one closed before its first ACK simply left at close).
	if j, r := m["propagation_conns_joined"], m["propagation_conns_released"]; j == 0 || r == 0 {
		t.Errorf("sockhash: %d client connections joined, %d released as not HTTP/1.x", j, r)
	}
	t.Logf("redis %d tests, pgbench %s, weft metrics %v", r1, p1, m)
}

// startPostgres runs a throwaway PostgreSQL cluster as the postgres user.
func startPostgres(t *testing.T, port int) *proc {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 {
		t.Fatal("PostgreSQL server binaries not found (scripts/deps.sh installs postgresql)")
	}
	binDir := filepath.Dir(bins[len(bins)-1])
	dir, err := os.MkdirTemp("", "weft-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if out, err := exec.Command("chown", "postgres:postgres", dir).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command("runuser", "-u", "postgres", "--", filepath.Join(binDir, "initdb"),
		"-D", data, "-A", "trust", "-U", "postgres").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p := start(t, "runuser", "-u", "postgres", "--", filepath.Join(binDir, "postgres"), "-D", data,
		"-p", strconv.Itoa(port), "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off")
	waitListening(t, port)
	// The postmaster is runuser's child; weft follows the postmaster's forks.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := exec.Command("pgrep", "-P", strconv.Itoa(p.Pid()), "-x", "postgres").Output()
		if pid, err := strconv.Atoi(strings.TrimSpace(string(out))); err == nil {
			// Stop the postmaster itself (SIGINT: fast shutdown): runuser
			// does not pass the signal on, and the server holds its pipes.
			t.Cleanup(func() {
				syscall.Kill(pid, syscall.SIGINT)
				for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
					time.Sleep(100 * time.Millisecond)
				}
			})
			return &proc{cmd: &exec.Cmd{Process: &os.Process{Pid: pid}}, done: p.done}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("postmaster not found")
	return nil
}
