package goexec

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// buildClient builds testdata/client with the go command, with extra flags.
func buildClient(t *testing.T, flags ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "client")
	args := append([]string{"build", "-o", out}, flags...)
	cmd := exec.Command("go", append(args, "./testdata/client")...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

func TestStrippedBinaryHasTheSameFunctions(t *testing.T) {
	full, err := Open(buildClient(t))
	if err != nil {
		t.Fatal(err)
	}
	stripped, err := Open(buildClient(t, "-ldflags=-s -w"))
	if err != nil {
		t.Fatal(err)
	}
	if full.Stripped || !stripped.Stripped {
		t.Errorf("stripped flags: full %v, stripped %v", full.Stripped, stripped.Stripped)
	}
	if full.GoVersion != runtime.Version() || full.Arch != runtime.GOARCH {
		t.Errorf("version %s/%s, want %s/%s", full.GoVersion, full.Arch, runtime.Version(), runtime.GOARCH)
	}
	for _, b := range []*Binary{full, stripped} {
		if why := b.Unsupported(); why != "" {
			t.Fatalf("unsupported: %s", why)
		}
		if !b.NetHTTPClient() {
			t.Fatal("net/http client not found")
		}
	}
	// Both builds link the same code at the same addresses; only symbols
	// and DWARF differ, after the code in the file.
	for _, name := range []string{NewProc1, RoundTrip, WriteLoop} {
		f, s := full.Funcs[name], stripped.Funcs[name]
		if f.Entry == 0 || f.Entry != s.Entry || len(f.Returns) != len(s.Returns) {
			t.Errorf("%s: full %+v, stripped %+v", name, f, s)
		}
	}
}

// Every offset found for a return holds a RET opcode, and the entry of
// each function is a function start as the Go table records it.
func TestReturnsAreRETInstructions(t *testing.T) {
	path := buildClient(t)
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fn := b.Funcs[NewProc1]
	if len(fn.Returns) == 0 {
		t.Fatal("no returns")
	}
	for _, off := range fn.Returns {
		if op := data[off]; op != 0xc3 && op != 0xc2 {
			t.Errorf("byte at %#x is %#x, not RET", off, op)
		}
		if off <= fn.Entry {
			t.Errorf("return %#x before entry %#x", off, fn.Entry)
		}
	}
}

func TestNotGo(t *testing.T) {
	if _, err := Open("/bin/sh"); !errors.Is(err, ErrNotGo) {
		t.Fatalf("sh: %v, want ErrNotGo", err)
	}
	if _, err := Read(bytes.NewReader([]byte("\x7fELF garbage"))); err == nil {
		t.Fatal("garbage parsed")
	}
}

func TestVersions(t *testing.T) {
	for v, want := range map[string]bool{"go1.16.15": false, "go1.17": true, "go1.19.8": true, "go1.27rc1": true, "go2.0": true, "devel": false} {
		if atLeast(v, 1, 17) != want {
			t.Errorf("atLeast(%q, 1, 17) = %v", v, !want)
		}
	}
	if why := (&Binary{Arch: "arm64", GoVersion: "go1.26"}).Unsupported(); why == "" {
		t.Error("arm64 taken as supported")
	}
}
