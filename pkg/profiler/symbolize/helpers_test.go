package symbolize

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// child is a running test program that printed one line of addresses and
// waits for its stdin to close.
type child struct {
	pid   uint32
	addrs []uint64
	cmd   *exec.Cmd
	stdin io.Closer
}

// startChild runs path and reads the hex addresses it prints first.
func startChild(t *testing.T, path string) *child {
	t.Helper()
	cmd := exec.Command(path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", path, err)
	}
	c := &child{pid: uint32(cmd.Process.Pid), cmd: cmd, stdin: stdin}
	t.Cleanup(c.stop)

	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		for _, f := range strings.Fields(line) {
			a, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
			if err != nil {
				t.Fatalf("%s printed %q: %v", path, line, err)
			}
			c.addrs = append(c.addrs, a)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s printed nothing", path)
	}
	if len(c.addrs) == 0 {
		t.Fatalf("%s printed no address", path)
	}
	return c
}

// stop ends the child and waits for it, so its pid is gone afterwards.
func (c *child) stop() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.stdin.Close()
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// run runs a build command in dir and fails the test with its output.
func run(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// needTool skips the test when a build tool is missing.
func needTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed", name)
	}
	return p
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newTestSymbolizer re-reads everything on every call, as tests change
// files between calls.
func newTestSymbolizer(procRoot string) *Symbolizer {
	return New(Options{ProcRoot: procRoot, RefreshInterval: time.Nanosecond})
}

func one(t *testing.T, frames []Frame) Frame {
	t.Helper()
	if len(frames) != 1 {
		t.Fatalf("got %d frames, want 1: %+v", len(frames), frames)
	}
	return frames[0]
}
