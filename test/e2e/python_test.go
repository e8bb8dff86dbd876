package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weftdev/weft/pkg/export/otlptest"
)

var pyAsyncEnv struct {
	once      sync.Once
	venv      string // the machine's Python with the app's packages
	companion string
	err       error
}

// pyAsync prepares testdata/pyasync: a virtual environment of the
// machine's Python with requirements.txt installed (in .cache, once; pip
// runs only when the requirements changed) and weft's companion; it
// returns the app, the venv's python and the companion's directory.
func pyAsync(t *testing.T) (app, venvPython, companion string) {
	t.Helper()
	src := filepath.Join(repoRoot(), "test", "e2e", "testdata", "pyasync")
	pyAsyncEnv.once.Do(func() {
		venv := filepath.Join(repoRoot(), ".cache", "pyasync-venv")
		req, err := os.ReadFile(filepath.Join(src, "requirements.txt"))
		if err != nil {
			pyAsyncEnv.err = err
			return
		}
		stamp := filepath.Join(venv, "weft-requirements.txt")
		if have, err := os.ReadFile(stamp); err != nil || !bytes.Equal(have, req) {
			os.RemoveAll(venv)
			for _, args := range [][]string{
				{"python3", "-m", "venv", venv},
				{filepath.Join(venv, "bin", "pip"), "install", "-q", "--disable-pip-version-check", "-r", filepath.Join(src, "requirements.txt")},
			} {
				if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
					pyAsyncEnv.err = fmt.Errorf("%v: %v\n%s", args, err, out)
					return
				}
			}
			if err := os.WriteFile(stamp, req, 0o644); err != nil {
				pyAsyncEnv.err = err
				return
			}
		}
		pyAsyncEnv.venv = filepath.Join(venv, "bin", "python")
		dir, err := sharedTempDir("weft-python-")
		if err != nil {
			pyAsyncEnv.err = err
			return
		}
		if out, err := exec.Command(bins.weft, "python", "path", "--out", dir).CombinedOutput(); err != nil {
			pyAsyncEnv.err = fmt.Errorf("weft python path: %v\n%s", err, out)
			return
		}
		pyAsyncEnv.companion = dir
	})
	if pyAsyncEnv.err != nil {
		t.Fatal(pyAsyncEnv.err)
	}
	return filepath.Join(src, "app.py"), pyAsyncEnv.venv, pyAsyncEnv.companion
}

// Python asyncio: parents as weft's companion announces them. 300 requests
// at concurrency 32 whose handlers wait, then call a backend through a
// pool of 8 connections, and as many that make two calls at once: aiohttp's
// server with aiohttp's client, FastAPI on uvicorn with httpx, on the
// machine's Python (packages from PyPI) and Debian's (Debian's packages).
// Calls made after their request was answered get no parent, each
// counted.
func TestPythonAsyncParents(t *testing.T) {
	setup(t)
	app, venv, companion := pyAsync(t)
	for _, tc := range []struct {
		name, python, server, client string
	}{
		{"aiohttp", venv, "aiohttp", "aiohttp"},
		{"fastapi-httpx", venv, "fastapi", "httpx"},
		{"debian-aiohttp", "/usr/bin/python3", "aiohttp", "aiohttp"},
		{"debian-fastapi-httpx", "/usr/bin/python3", "fastapi", "httpx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := otlptest.Start(t)
			backend, backAddr := startServer(t, "-mode=nethttp")
			cmd := exec.Command(tc.python, app, backAddr, tc.server, tc.client)
			cmd.Env = append(os.Environ(), "OTEL_SERVICE_NAME=front", "PYTHONPATH="+companion)
			front, frontAddr := startListener(t, cmd)
			w := startWeft(t, rcv, fmt.Sprintf("--pid=%d,%d", front.Pid(), backend.Pid()))
			if !strings.Contains(w.Output(), "asyncio calls as weft's companion announces them") {
				t.Fatalf("the front was not followed as Python:\n%s", w.Output())
			}
			checkNumberedEndpoints(t, w, rcv, "http://"+frontAddr, []frontPath{{"/req/", 1}, {"/fan/", 2}})
			checkLateCalls(t, w, rcv, "http://"+frontAddr)
		})
	}
}

// httpx's HTTP/2 client (httpcore): a FastAPI front makes every call on
// one HTTP/2 connection to h2app's backend (h2c by prior knowledge, then
// TLS), where the streams of 32 requests at once interleave; the
// companion announces each stream by its id before its HEADERS are
// written (announce.h). Every client span is under its own request, every
// backend span under its call, none split.
func TestPythonHTTP2ClientParents(t *testing.T) {
	setup(t)
	app, venv, companion := pyAsync(t)
	checkFrontCalls(t, func(backAddr string, tls bool) *exec.Cmd {
		cmd := exec.Command(venv, app, backAddr, "fastapi", map[bool]string{false: "httpx-h2", true: "httpx-h2-tls"}[tls])
		cmd.Env = []string{"PYTHONPATH=" + companion}
		return cmd
	}, h2Backend, h2Call)
}
