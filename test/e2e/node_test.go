package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

var nodeApp struct {
	once   sync.Once
	script string
	err    error
}

var debianNodeBin struct {
	once sync.Once
	path string
	err  error
}

// debianNode unpacks Debian's Node.js (scripts/debian-node.sh) and returns
// its binary and the environment it runs with.
func debianNode(t *testing.T) (string, []string) {
	t.Helper()
	debianNodeBin.once.Do(func() {
		out, err := exec.Command(filepath.Join(repoRoot(), "scripts", "debian-node.sh")).Output()
		if err != nil {
			debianNodeBin.err = fmt.Errorf("scripts/debian-node.sh: %v", err)
			return
		}
		debianNodeBin.path = strings.TrimSpace(string(out))
	})
	if debianNodeBin.err != nil {
		t.Fatal(debianNodeBin.err)
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(debianNodeBin.path)))
	return debianNodeBin.path, []string{"LD_LIBRARY_PATH=" + filepath.Join(root, "usr", "lib", "x86_64-linux-gnu")}
}

// nodeAsync installs testdata/nodeasync's packages (npm ci, once per
// run; nothing to fetch when node_modules is current) and writes weft's
// companion out; it returns the app and the companion's paths.
func nodeAsync(t *testing.T) (app, companion string) {
	t.Helper()
	dir := filepath.Join(repoRoot(), "test", "e2e", "testdata", "nodeasync")
	nodeApp.once.Do(func() {
		if !npmCurrent(dir) {
			cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund")
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				nodeApp.err = fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
				return
			}
		}
		tmp, err := sharedTempDir("weft-node-")
		if err != nil {
			nodeApp.err = err
			return
		}
		nodeApp.script = filepath.Join(tmp, "weft-node.js")
		if out, err := exec.Command(bins.weft, "node", "script", "--out", nodeApp.script).CombinedOutput(); err != nil {
			nodeApp.err = fmt.Errorf("weft node script: %v\n%s", err, out)
		}
	})
	if nodeApp.err != nil {
		t.Fatal(nodeApp.err)
	}
	return filepath.Join(dir, "app.js"), nodeApp.script
}

// npmCurrent reports whether npm ci has installed dir's lock file.
func npmCurrent(dir string) bool {
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return false
	}
	inst, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	return err == nil && !inst.ModTime().Before(lock.ModTime())
}

// Node.js: parents as weft's companion announces them, on the machine's
// Node.js (libuv linked in) and Debian's (libnode, the shared libuv).
// 300 requests at
// concurrency 32 whose handlers wait, then call a backend with http.get
// through a keep-alive agent of 8 sockets (so calls wait for a socket that
// another request frees), two such calls at once, and fetch; the
// companion loaded by NODE_OPTIONS into a plain http server and an Express
// app, and into a running server by `weft node attach`. Calls made after
// their request was answered get no parent, each counted.
func TestNodeAsyncParents(t *testing.T) {
	setup(t)
	app, companion := nodeAsync(t)
	for _, tc := range []struct {
		name, flavour string
		load          string // how the companion is loaded: require, attach (weft node attach), run (--node-agent)
		debian        bool   // Debian's Node.js
	}{
		{"http-require", "http", "require", false},
		{"express-require", "express", "require", false},
		{"http-attach", "http", "attach", false},
		{"express-run-attach", "express", "run", false},
		{"debian-http-require", "http", "require", true},
		{"debian-express-attach", "express", "attach", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			backend, backAddr := startServer(t, "-mode=nethttp")
			node, env := "node", []string(nil)
			if tc.debian {
				node, env = debianNode(t)
			}
			cmd := exec.Command(node, app, backAddr, tc.flavour)
			cmd.Env = append(append(os.Environ(), env...), "OTEL_SERVICE_NAME=front")
			if tc.load == "require" {
				cmd.Env = append(cmd.Env, "NODE_OPTIONS=--require "+companion)
			}
			front, frontAddr := startListener(t, cmd)
			args := []string{fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid())}
			if tc.load == "run" {
				args = append(args, "--node-agent=attach")
			}
			w := startWeft(t, rcv, args...)
			if !strings.Contains(w.Output(), "mode=\"node companion\"") {
				t.Fatalf("the front was not followed as Node.js:\n%s", w.Output())
			}
			switch tc.load {
			case "run":
				waitOutput(t, w.proc, "node companion attached", 20*time.Second)
			case "attach":
				out, err := exec.Command(bins.weft, "node", "attach", fmt.Sprint(front.Pid())).CombinedOutput()
				if err != nil {
					t.Fatalf("weft node attach: %v\n%s", err, out)
				}
				if ports := listeningPortsOf(t, front.Pid()); len(ports) != 1 {
					t.Errorf("after attach the front listens on %v: the inspector stayed open", ports)
				}
			}
			checkNumberedEndpoints(t, w, rcv, "http://"+frontAddr, []frontPath{{"/req/", 1}, {"/fan/", 2}, {"/fetch/", 1}})
			checkLateCalls(t, w, rcv, "http://"+frontAddr)
		})
	}
}

// Node.js's HTTP/2 client: a front serving HTTP/1.1 makes every call on
// one node:http2 session to h2app's HTTP/2 backend (h2c, then TLS), where
// the streams of 32 requests at once interleave; the companion claims
// each stream by its id (announce.h). Every client span is under its own
// request, every backend span under its call, none split.
func TestNodeHTTP2ClientParents(t *testing.T) {
	setup(t)
	app, companion := nodeAsync(t)
	checkFrontCalls(t, func(backAddr string, tls bool) *exec.Cmd {
		cmd := exec.Command("node", app, backAddr, map[bool]string{false: "h2", true: "h2-tls"}[tls])
		cmd.Env = []string{"NODE_OPTIONS=--require " + companion}
		return cmd
	}, h2Backend, h2Call)
}

// listeningPortsOf lists the TCP ports process pid listens on.
func listeningPortsOf(t *testing.T, pid int) []string {
	t.Helper()
	out, err := exec.Command("ss", "-Hltnp").CombinedOutput()
	if err != nil {
		t.Fatalf("ss: %v\n%s", err, out)
	}
	var ports []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, fmt.Sprintf("pid=%d,", pid)) {
			ports = append(ports, strings.Fields(l)[3])
		}
	}
	return ports
}

// waitOutput waits until p has printed want.
func waitOutput(t *testing.T, p *proc, want string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(p.Output(), want) {
		if time.Now().After(deadline) || !p.Alive() {
			t.Fatalf("no %q within %s:\n%s", want, timeout, p.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A Node.js process without the companion: one thread serves every
// request, so each call starts a trace of its own, counted; none gets a
// wrong parent.
func TestNodeWithoutCompanion(t *testing.T) {
	setup(t)
	app, _ := nodeAsync(t)
	rcv := otlptest.Start(t)
	backend, backAddr := startServer(t, "-mode=nethttp")
	cmd := exec.Command("node", app, backAddr, "http")
	cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=front")
	front, frontAddr := startListener(t, cmd)
	w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
	const n = 300
	numberedLoad(t, "http://"+frontAddr+"/req/", n, 32)
	spans := collectSpans(t, rcv, 3*n, 60*time.Second)
	r := checkParents(spans, "front", "websrv")
	m, err := w.Metrics()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s; refused as unknown: %d", r, m["parent_refused_unknown_runtime"])
	if r.wrong != 0 || r.right != 0 || r.split != n || m["parent_refused_unknown_runtime"] != n {
		t.Errorf("want %d split calls, each counted: %s; counted %d", n, r, m["parent_refused_unknown_runtime"])
	}
}
