package symbolize

import (
	"os"
	"path/filepath"
	"testing"
)

// LoadKernel reads kallsyms at once; the first kernel frame then needs no
// read (the file is gone by then and still resolves).
func TestLoadKernel(t *testing.T) {
	b, err := os.ReadFile("testdata/kallsyms")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kallsyms")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := New(Options{KallsymsPath: path})
	s.LoadKernel()
	os.Remove(path)
	if f := one(t, s.Symbolize(1, nil, []uint64{0xffffffff81002010})); f.Function != "vfs_read" {
		t.Errorf("got %+v", f)
	}
}
