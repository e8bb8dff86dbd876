package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weftdev/weft/test/testcert"
)

var tlsServers = flag.String("tls-servers", "nginx,go,node", "with -tls: which of the servers to load, in order (go-plain: the Go server's binary and handler over plaintext HTTP/1.1, for comparison; nginx-h2: nginx over HTTP/2, streams on one connection)")

var tlsBench = flag.Bool("tls", false, "benchmark HTTPS (TLS capture by uprobes): nginx terminating TLS in front of a Go backend, a Go HTTPS server (h2app, stripped) and a Node.js HTTPS server (memory BIOs), each loaded over HTTPS/1.1 with keep-alive at -rate (default 1000/s): CPU per request of the traced processes across -modes (notls: weft with --tls=off)")

// nodeHTTPSServer answers every request at once over HTTPS/1.1:
//
//	node server.js CERT KEY
const nodeHTTPSServer = `const https = require('https');
const fs = require('fs');
const s = https.createServer({ cert: fs.readFileSync(process.argv[2]), key: fs.readFileSync(process.argv[3]) },
  (req, res) => res.end('ok\n'));
s.keepAliveTimeout = 60000;
s.listen(0, '127.0.0.1', () => process.stdout.write(s.address().address + ':' + s.address().port + '\n'));
`

// nginxBenchConf: one worker terminating TLS, proxying to the backend
// over a keepalive pool, so that the upstream side costs little.
const nginxBenchConf = `daemon off;
master_process on;
worker_processes 1;
pid %[1]s/nginx.pid;
error_log stderr error;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path %[1]s/body;
	proxy_temp_path %[1]s/proxy;
	fastcgi_temp_path %[1]s/fastcgi;
	uwsgi_temp_path %[1]s/uwsgi;
	scgi_temp_path %[1]s/scgi;
	upstream backend { server %[2]s; keepalive 16; }
	server {
		listen 127.0.0.1:%[3]d ssl;
		listen 127.0.0.1:%[4]d ssl http2;
		ssl_certificate %[1]s/cert.pem;
		ssl_certificate_key %[1]s/key.pem;
		location / {
			proxy_pass http://backend;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
		}
	}
}
`

// runTLSBench measures what capturing TLS in clear costs per request: the
// open-loop client (this process, untraced) speaks HTTPS/1.1 on kept-alive
// connections to nginx with TLS (in front of websrv) and to h2app's Go
// HTTPS server, and HTTP/2 to nginx (nginx-h2); the traced processes' CPU
// per request is compared across modes, round by round, one scenario
// after the other.
func runTLSBench() {
	dir, err := os.MkdirTemp("", "weft-bench-")
	check(err)
	defer os.RemoveAll(dir)
	check(os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("1"), 0o644))
	defer os.WriteFile("/proc/sys/kernel/bpf_stats_enabled", []byte("0"), 0o644)
	srvBin, h2Bin := filepath.Join(dir, "websrv"), filepath.Join(dir, "h2app")
	for bin, pkg := range map[string]string{srvBin: "./test/e2e/testdata/websrv", h2Bin: "./test/e2e/testdata/h2app"} {
		if out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, pkg).CombinedOutput(); err != nil {
			log.Fatalf("build %s: %v\n%s", pkg, err, out)
		}
	}
	backend, baddr := startServer(srvBin, "-mode=nethttp", "-addr=127.0.0.1:0")
	defer backend.Process.Kill()
	cert, key, err := testcert.Files(dir)
	check(err)
	port, h2port := freePort(), freePort()
	conf := filepath.Join(dir, "nginx.conf")
	check(os.WriteFile(conf, []byte(fmt.Sprintf(nginxBenchConf, dir, baddr, port, h2port)), 0o644))
	nginx := exec.Command("nginx", "-c", conf, "-e", "stderr")
	orphanless(nginx)
	nginx.Stderr = os.Stderr
	check(nginx.Start())
	defer func() {
		// SIGTERM: the master stops its workers (a SIGKILL leaves them).
		nginx.Process.Signal(syscall.SIGTERM)
		nginx.Wait()
	}()
	naddr := "127.0.0.1:" + strconv.Itoa(port)
	workers := waitNginx(nginx.Process.Pid, naddr)
	goSrv, gaddr := startServer(h2Bin, "-mode=https-server")
	defer goSrv.Process.Kill()
	plainSrv, paddr := startServer(h2Bin, "-mode=h2c-server") // HTTP/1.1 too
	defer plainSrv.Process.Kill()
	script := filepath.Join(dir, "server.js")
	check(os.WriteFile(script, []byte(nodeHTTPSServer), 0o644))
	nodeSrv, nodeAddr := startServer("node", script, cert, key)
	defer nodeSrv.Process.Kill()

	otlp := startSink()
	order := strings.Split(*modes, ",")
	scenarios := map[string]struct {
		name, url string
		pids      []int
	}{
		"nginx": {"nginx (TLS) → Go backend", "https://" + naddr + *urlPath, append([]int{nginx.Process.Pid, backend.Process.Pid}, workers...)},
		// The same over HTTP/2 (ALPN), streams on one connection: the
		// stream's span decided where nginx calls upstream (nginx.h).
		"nginx-h2": {"nginx (TLS, HTTP/2) → Go backend", h2Scheme + "https://127.0.0.1:" + strconv.Itoa(h2port) + *urlPath,
			append([]int{nginx.Process.Pid, backend.Process.Pid}, workers...)},
		"go": {"Go HTTPS server (h2app, stripped)", "https://" + gaddr + "/req/0", []int{goSrv.Process.Pid}},
		// The same server and handler without TLS: what capture costs
		// plaintext HTTP, the comparison for what TLS adds.
		"go-plain": {"Go HTTP server (h2app, stripped; plaintext HTTP/1.1)", "http://" + paddr + "/req/0", []int{plainSrv.Process.Pid}},
		"node":     {"Node.js HTTPS server", "https://" + nodeAddr + "/", []int{nodeSrv.Process.Pid}},
	}
	for _, name := range strings.Split(*tlsServers, ",") {
		sc, ok := scenarios[name]
		if !ok {
			log.Fatalf("-tls-servers: no server %q (nginx, nginx-h2, go, go-plain, node)", name)
		}
		openLoop(sc.url, *rate, 3*time.Second, *conns) // warm up
		var runs []run
		for i := 0; i < *rounds; i++ {
			for _, m := range rotated(order, i) {
				r := measure(sc.url, sc.pids, m, otlp)
				r.round = i
				runs = append(runs, r)
			}
		}
		proto := "HTTPS/1.1"
		if strings.HasPrefix(sc.url, h2Scheme) {
			proto = "HTTP/2 over TLS"
		}
		fmt.Printf("\n%s: %s at %d/s for %v per run, %d rounds; \"server CPU\" is every traced process together\n\n",
			sc.name, proto, *rate, *duration, *rounds)
		report(runs, order)
	}
}

// waitNginx waits until nginx answers on addr and returns its workers.
func waitNginx(master int, addr string) []int {
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", master, master))
		kids := strings.Fields(string(b))
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close() // an open, silent connection would hold a worker
		}
		if err == nil && len(kids) > 0 {
			var out []int
			for _, k := range kids {
				n, _ := strconv.Atoi(k)
				out = append(out, n)
			}
			return out
		}
	}
	log.Fatal("nginx did not come up")
	return nil
}
