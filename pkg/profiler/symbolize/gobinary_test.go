package symbolize

import (
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// goProgram prints the entry address of one of its own functions, then
// waits for stdin to close.
const goProgram = `package main

import (
	"fmt"
	"os"
	"reflect"
)

//go:noinline
func weftProbeTarget(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i
	}
	return s
}

func main() {
	fmt.Printf("%x\n", reflect.ValueOf(weftProbeTarget).Pointer())
	weftProbeTarget(3)
	var b [1]byte
	for {
		if _, err := os.Stdin.Read(b[:]); err != nil {
			return
		}
	}
}
`

// buildGo builds goProgram with extra go build flags.
func buildGo(t *testing.T, flags ...string) string {
	t.Helper()
	gobin := needTool(t, "go")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "main.go"), goProgram)
	out := filepath.Join(dir, "probe")
	args := append([]string{"build", "-o", out}, flags...)
	run(t, dir, []string{"CGO_ENABLED=0", "GOFLAGS=-buildvcs=false", "GOTOOLCHAIN=local"}, gobin, append(args, "main.go")...)
	return out
}

// TestGoBinaries resolves a function of a running Go program built plain,
// stripped, as PIE and as stripped PIE: the last two load at a random base,
// the stripped ones have no ELF symbols left, only .gopclntab.
func TestGoBinaries(t *testing.T) {
	builds := map[string][]string{
		"plain":        nil,
		"stripped":     {"-ldflags=-s -w"},
		"pie":          {"-buildmode=pie"},
		"pie-stripped": {"-buildmode=pie", "-ldflags=-s -w"},
	}
	for name, flags := range builds {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bin := buildGo(t, flags...)
			c := startChild(t, bin)
			entry := c.addrs[0]
			s := newTestSymbolizer("")

			for _, addr := range []uint64{entry, entry + 4} {
				f := one(t, s.Symbolize(c.pid, []uint64{addr}, nil))
				if f.Function != "main.weftProbeTarget" {
					t.Fatalf("%#x: got %+v", addr, f)
				}
				if !strings.HasSuffix(f.File, "main.go") || f.Line < 10 || f.Line > 16 {
					t.Errorf("%#x: source %s:%d", addr, f.File, f.Line)
				}
				if f.Module != bin || f.Kind != KindUser || f.Address != addr {
					t.Errorf("%#x: frame %+v", addr, f)
				}
			}

			// A process that exited keeps resolving from what was read.
			c.stop()
			f := one(t, s.Symbolize(c.pid, []uint64{entry}, nil))
			if f.Function != "main.weftProbeTarget" {
				t.Errorf("after exit: got %+v", f)
			}
		})
	}
}

// TestGoBinaryCachedOnce checks that two processes of one binary share one
// parsed copy.
func TestGoBinaryCachedOnce(t *testing.T) {
	bin := buildGo(t)
	a, b := startChild(t, bin), startChild(t, bin)
	s := newTestSymbolizer("")
	for _, c := range []*child{a, b} {
		if f := one(t, s.Symbolize(c.pid, []uint64{c.addrs[0]}, nil)); f.Function != "main.weftProbeTarget" {
			t.Fatalf("pid %d: got %+v", c.pid, f)
		}
	}
	if n := s.binaries.Len(); n != 1 {
		t.Fatalf("%d binaries cached, want 1", n)
	}
}

//go:noinline
func stackA() []uintptr { return stackB() }

//go:noinline
func stackB() []uintptr { return stackC() }

//go:noinline
func stackC() []uintptr {
	pcs := make([]uintptr, 16)
	return pcs[:runtime.Callers(1, pcs)]
}

// TestOwnStack symbolises a real call stack of return addresses, as a
// sampled stack is: each must name its caller, not what follows the call.
func TestOwnStack(t *testing.T) {
	pcs := stackA()
	ips := make([]uint64, len(pcs))
	for i, pc := range pcs {
		ips[i] = uint64(pc)
	}
	frames := newTestSymbolizer("").Symbolize(uint32(os.Getpid()), ips, []uint64{0xffffffff81000000})
	var names []string
	for _, f := range frames[1:] {
		names = append(names, f.Function)
	}
	const pkg = "github.com/weftdev/weft/pkg/profiler/symbolize."
	want := []string{pkg + "stackC", pkg + "stackB", pkg + "stackA", pkg + "TestOwnStack", "testing.tRunner"}
	if len(names) < len(want) || !slices.Equal(names[:len(want)], want) {
		t.Fatalf("got %q, want prefix %q", names, want)
	}
}
