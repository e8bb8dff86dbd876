package symbolize

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const cLibrary = `int weft_lib_work(int x) {
	int s = 0;
	for (int i = 0; i < x; i++) s += i * 3;
	return s;
}
`

// cProgram prints, in hex: libc's getpid, the shared library's function
// and a static function of its own, then waits for stdin to close.
const cProgram = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

int weft_lib_work(int);

__attribute__((noinline)) static int weft_static_helper(int x) {
	return weft_lib_work(x) + 1;
}

int main(void) {
	printf("%lx %lx %lx\n",
		(unsigned long)dlsym(RTLD_DEFAULT, "getpid"),
		(unsigned long)dlsym(RTLD_DEFAULT, "weft_lib_work"),
		(unsigned long)&weft_static_helper);
	fflush(stdout);
	char b;
	while (read(0, &b, 1) > 0) {}
	return weft_static_helper(1) > 0 ? 0 : 1;
}
`

// cBuild is a C program linked against a shared library of ours, each
// also in a stripped copy.
type cBuild struct {
	dir, prog, progStripped, lib string
}

func buildC(t *testing.T) cBuild {
	t.Helper()
	gcc := needTool(t, "gcc")
	strip := needTool(t, "strip")
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "lib.c"), cLibrary)
	writeFile(t, filepath.Join(dir, "main.c"), cProgram)
	run(t, dir, nil, gcc, "-O1", "-fPIC", "-shared", "-o", "libweftfoo.so", "lib.c")
	run(t, dir, nil, gcc, "-O1", "-o", "prog", "main.c", "-L.", "-lweftfoo", "-Wl,-rpath,"+dir, "-ldl")
	run(t, dir, nil, "cp", "prog", "prog-stripped")
	run(t, dir, nil, strip, "--strip-all", "prog-stripped", "libweftfoo.so")
	return cBuild{
		dir:          dir,
		prog:         filepath.Join(dir, "prog"),
		progStripped: filepath.Join(dir, "prog-stripped"),
		lib:          filepath.Join(dir, "libweftfoo.so"),
	}
}

// TestCBinaries resolves a libc symbol, a function of a (stripped) shared
// library from its .dynsym, and a static function of a PIE executable.
func TestCBinaries(t *testing.T) {
	b := buildC(t)
	c := startChild(t, b.prog)
	getpid, libWork, helper := c.addrs[0], c.addrs[1], c.addrs[2]
	s := newTestSymbolizer("")

	f := one(t, s.Symbolize(c.pid, []uint64{getpid}, nil))
	t.Logf("getpid at %#x: %s in %s", getpid, f.Name(), f.Module)
	if f.Function != "getpid" && f.Function != "__getpid" {
		t.Errorf("getpid: got %+v", f)
	}
	if !strings.Contains(filepath.Base(f.Module), "libc") {
		t.Errorf("getpid: module %q", f.Module)
	}

	f = one(t, s.Symbolize(c.pid, []uint64{libWork + 2}, nil))
	if f.Function != "weft_lib_work" || f.Module != b.lib {
		t.Errorf("weft_lib_work: got %+v", f)
	}

	f = one(t, s.Symbolize(c.pid, []uint64{helper}, nil))
	if f.Function != "weft_static_helper" || f.Module != b.prog {
		t.Errorf("weft_static_helper: got %+v", f)
	}
}

// TestCStrippedExecutable checks that a function a stripped binary no
// longer names keeps the binary and its link-time address.
func TestCStrippedExecutable(t *testing.T) {
	b := buildC(t)
	want := symbolValue(t, b.prog, "weft_static_helper")
	c := startChild(t, b.progStripped)
	s := newTestSymbolizer("")
	f := one(t, s.Symbolize(c.pid, []uint64{c.addrs[2]}, nil))
	if f.Resolved() || f.Offset != want || f.Module != b.progStripped {
		t.Fatalf("got %+v, want unresolved at %#x", f, want)
	}
	if got, w := f.Name(), fmt.Sprintf("prog-stripped+%#x", want); got != w {
		t.Fatalf("name %q, want %q", got, w)
	}
}

func symbolValue(t *testing.T, path, name string) uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s.Value
		}
	}
	t.Fatalf("%s has no symbol %s", path, name)
	return 0
}

// TestReusedInode: a deployment replaces a binary and the new file gets
// the old one's inode. The cached parse of the old file must not name the
// new process's code.
func TestReusedInode(t *testing.T) {
	b := buildC(t)
	helper := symbolValue(t, b.prog, "weft_static_helper")
	seg := execSegment(t, b.prog)
	const start = 0x10000000
	off := seg.Off &^ 0xfff
	addr := start + helper - seg.Vaddr + seg.Off - off
	line := fmt.Sprintf("%x-%x r-xp %08x 08:01 4242 /app/prog\n", start, start+seg.Filesz+0x1000, off)

	root := t.TempDir()
	writeFile(t, filepath.Join(root, "100", "maps"), line)
	writeFile(t, filepath.Join(root, "101", "maps"), line)
	copyFile(t, b.prog, filepath.Join(root, "100", "root", "app", "prog"))
	copyFile(t, b.progStripped, filepath.Join(root, "101", "root", "app", "prog"))

	s := newTestSymbolizer(root)
	if f := one(t, s.Symbolize(100, []uint64{addr}, nil)); f.Function != "weft_static_helper" {
		t.Fatalf("old binary: got %+v", f)
	}
	if f := one(t, s.Symbolize(101, []uint64{addr}, nil)); f.Resolved() || f.Offset != helper {
		t.Fatalf("new binary: got %+v, want unresolved at %#x", f, helper)
	}
}

func execSegment(t *testing.T, path string) *elf.Prog {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 {
			return p
		}
	}
	t.Fatalf("%s has no executable segment", path)
	return nil
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, to, string(data))
}
