package symbolize

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProc lays out /proc/<pid> with the given maps under a temp root.
func fakeProc(t *testing.T, pid string, maps string) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, pid, "maps"), maps)
	return root
}

const jitMaps = `00400000-00452000 r-xp 00000000 08:01 1234                               /usr/bin/java
7f0000000000-7f0000100000 rwxp 00000000 00:00 0 
7f0000200000-7f0000300000 r-xp 00000000 00:00 0                          [anon:jit code]
7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                          [vdso]
`

func TestPerfMap(t *testing.T) {
	root := fakeProc(t, "4242", jitMaps)
	perf := filepath.Join(root, "4242", "root", "tmp", "perf-4242.map")
	writeFile(t, perf, strings.Join([]string{
		"7f0000001000 100 Interpreter",
		"0x7f0000002000 0x80 LFoo;::bar (compiled)",
		"7f0000200000 40 Lcom/example/Hot;::run",
		"garbage line",
		"",
	}, "\n"))
	s := newTestSymbolizer(root)

	cases := map[uint64]string{
		0x7f0000001010: "Interpreter",
		0x7f0000002000: "LFoo;::bar (compiled)",
		0x7f0000200020: "Lcom/example/Hot;::run",
	}
	for addr, want := range cases {
		f := one(t, s.Symbolize(4242, []uint64{addr}, nil))
		if f.Function != want || f.Kind != KindJIT {
			t.Errorf("%#x: got %+v, want %q", addr, f, want)
		}
	}
	// Past the end of a JIT symbol: the anonymous mapping and address stay.
	f := one(t, s.Symbolize(4242, []uint64{0x7f0000002080}, nil))
	if f.Resolved() || f.Module != ModuleAnon || f.Name() != "[anon] 0x7f0000002080" {
		t.Errorf("unnamed JIT address: got %+v (%s)", f, f.Name())
	}

	// The JVM rewrites the file as it compiles: new code at a new address,
	// other code replaced at an old one.
	writeFile(t, perf, "7f0000001000 100 Interpreter\n7f0000003000 200 LNew;::code\n7f0000001000 80 LReplaced;::m\n")
	if f := one(t, s.Symbolize(4242, []uint64{0x7f0000003010}, nil)); f.Function != "LNew;::code" {
		t.Errorf("after rewrite: got %+v", f)
	}
	if f := one(t, s.Symbolize(4242, []uint64{0x7f0000001010}, nil)); f.Function != "LReplaced;::m" {
		t.Errorf("replaced code: got %+v", f)
	}

	// Same size, new mtime: still re-read.
	before := "7f0000001000 100 LSameSize;::aa\n7f0000003000 200 LNew;::code\n"
	after := "7f0000001000 100 LSameSize;::bb\n7f0000003000 200 LNew;::code\n"
	stamp := time.Now().Add(time.Minute)
	for i, content := range []string{before, after} {
		writeFile(t, perf, content)
		mtime := stamp.Add(time.Duration(i) * time.Second)
		if err := os.Chtimes(perf, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		want := "LSameSize;::" + strings.Repeat(string(rune('a'+i)), 2)
		if f := one(t, s.Symbolize(4242, []uint64{0x7f0000001010}, nil)); f.Function != want {
			t.Errorf("same-size rewrite %d: got %+v, want %q", i, f, want)
		}
	}

	// The file vanishing keeps what was read.
	if err := os.Remove(perf); err != nil {
		t.Fatal(err)
	}
	if f := one(t, s.Symbolize(4242, []uint64{0x7f0000003010}, nil)); f.Function != "LNew;::code" {
		t.Errorf("after removal: got %+v", f)
	}
}

// Within the refresh interval the cached map answers, unless the runtime
// was just asked to rewrite it: then the next look-up reads the new one.
func TestPerfMapChanged(t *testing.T) {
	root := fakeProc(t, "4242", jitMaps)
	perf := filepath.Join(root, "4242", "root", "tmp", "perf-4242.map")
	writeFile(t, perf, "7f0000001000 100 Interpreter\n")
	s := New(Options{ProcRoot: root, RefreshInterval: time.Hour})
	const addr = 0x7f0000200020
	if f := one(t, s.Symbolize(4242, []uint64{addr}, nil)); f.Resolved() {
		t.Fatalf("named before compiled: %+v", f)
	}
	writeFile(t, perf, "7f0000001000 100 Interpreter\n7f0000200000 40 Lcom/example/Hot;::run\n")
	if f := one(t, s.Symbolize(4242, []uint64{addr}, nil)); f.Resolved() {
		t.Fatalf("map re-read within the refresh interval: %+v", f)
	}
	s.PerfMapChanged(4242)
	if f := one(t, s.Symbolize(4242, []uint64{addr}, nil)); f.Function != "Lcom/example/Hot;::run" {
		t.Errorf("after PerfMapChanged: got %+v", f)
	}
	s.PerfMapChanged(999) // unknown pid: nothing to do
}

// TestPerfMapNamespacedPID finds the map of a containerised JVM, named
// after its pid inside the container and written to the container's /tmp.
func TestPerfMapNamespacedPID(t *testing.T) {
	root := fakeProc(t, "4242", jitMaps)
	writeFile(t, filepath.Join(root, "4242", "status"), "Name:\tjava\nNSpid:\t4242\t7\n")
	writeFile(t, filepath.Join(root, "4242", "root", "tmp", "perf-7.map"), "7f0000001000 100 LInContainer;::run\n")
	s := newTestSymbolizer(root)
	if f := one(t, s.Symbolize(4242, []uint64{0x7f0000001010}, nil)); f.Function != "LInContainer;::run" {
		t.Fatalf("got %+v", f)
	}
}

func TestParsePerfMapOverlapLaterWins(t *testing.T) {
	syms, err := parsePerfMap(strings.NewReader("1000 10 a\n1000 20 b\n2000 10 c\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := syms.lookup(0x1018); !ok || s.name != "b" {
		t.Fatalf("got %+v %v", s, ok)
	}
	if len(syms) != 2 {
		t.Fatalf("got %d entries", len(syms))
	}
}
