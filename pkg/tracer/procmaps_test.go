package tracer

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The test binary maps its own executable: both names must open it.
func TestFindMapping(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	base := filepath.Base(exe)
	m, ok, err := findMapping(os.Getpid(), func(b string) bool { return b == base })
	if err != nil || !ok {
		t.Fatalf("findMapping(self, %q) = %v, %v", base, ok, err)
	}
	want, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.Stat(m.root)
	if err != nil {
		t.Fatalf("stat %s: %v", m.root, err)
	}
	if !os.SameFile(got, want) {
		t.Errorf("%s is not %s", m.root, exe)
	}
	if filepath.Dir(m.mapFile) != filepath.Join("/proc", strconv.Itoa(os.Getpid()), "map_files") {
		t.Errorf("map_files path %s", m.mapFile)
	}
	if _, ok, err := findMapping(os.Getpid(), func(string) bool { return false }); ok || err != nil {
		t.Errorf("no match: ok=%v err=%v", ok, err)
	}
}

// A file reached through /proc/self/exe and by its own path is one file;
// a directory is none.
func TestStatFileID(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	a, err := statFileID(exe)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := statFileID("/proc/self/exe"); err != nil || b != a {
		t.Errorf("/proc/self/exe: %v %v, want %v", b, err, a)
	}
	if _, err := statFileID(t.TempDir()); err == nil {
		t.Error("a directory has a file id")
	}
}
