package store

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

func testProfile(fn string) *profile.Profile {
	f := &profile.Function{ID: 1, Name: fn}
	l := &profile.Location{ID: 1, Line: []profile.Line{{Function: f}}}
	return &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Sample:     []*profile.Sample{{Location: []*profile.Location{l}, Value: []int64{3}, Label: map[string][]string{"span_id": {"none"}}}},
		Location:   []*profile.Location{l},
		Function:   []*profile.Function{f},
	}
}

func TestWriteListRead(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 29, 15, 4, 5, 123e6, time.UTC)
	var paths []string
	for i, svc := range []string{"checkout", "checkout", "cart/v2"} {
		p, err := Write(dir, svc, testProfile("f"+svc), t0.Add(time.Duration(i)*30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	if want := filepath.Join(dir, "checkout", "2026-11-29T15-04-05.123Z.pb.gz"); paths[0] != want {
		t.Errorf("path %s, want %s", paths[0], want)
	}
	if !strings.Contains(paths[2], filepath.Join(dir, "cart_v2")+"/") {
		t.Errorf("service name not made safe: %s", paths[2])
	}

	all, err := List(dir, time.Time{}, "")
	if err != nil || len(all) != 3 {
		t.Fatalf("list: %v %v", all, err)
	}
	for i, f := range all {
		if f.Path != paths[i] {
			t.Errorf("file %d: %s, want %s (oldest first)", i, f.Path, paths[i])
		}
	}
	if !all[0].End.Equal(t0) {
		t.Errorf("end %v, want %v", all[0].End, t0)
	}
	recent, _ := List(dir, t0.Add(time.Second), "")
	if len(recent) != 2 {
		t.Errorf("since: %d files, want 2", len(recent))
	}
	one, _ := List(dir, time.Time{}, "cart/v2")
	if len(one) != 1 || one[0].Service != "cart_v2" {
		t.Errorf("by service: %+v", one)
	}

	p, err := Read(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	if p.Sample[0].Value[0] != 3 || p.Function[0].Name != "fcheckout" {
		t.Errorf("read back %v", p)
	}
	if st, _ := os.Stat(paths[0]); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v", st.Mode())
	}
}

func TestListIgnoresOthers(t *testing.T) {
	dir := t.TempDir()
	if files, err := List(filepath.Join(dir, "missing"), time.Time{}, ""); err != nil || files != nil {
		t.Errorf("missing dir: %v %v", files, err)
	}
	os.MkdirAll(filepath.Join(dir, "svc"), 0o755)
	for _, name := range []string{".partial-123", "notes.txt", "2026-13-99T00-00-00.000Z.pb.gz"} {
		os.WriteFile(filepath.Join(dir, "svc", name), []byte("x"), 0o644)
	}
	os.WriteFile(filepath.Join(dir, "stray.pb.gz"), []byte("x"), 0o644)
	if files, err := List(dir, time.Time{}, ""); err != nil || len(files) != 0 {
		t.Errorf("listed %v %v", files, err)
	}
}

func TestPrune(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old, _ := Write(dir, "a", testProfile("x"), now.Add(-2*time.Hour))
	fresh, _ := Write(dir, "a", testProfile("x"), now)
	stale := filepath.Join(dir, "a", ".partial-1")
	os.WriteFile(stale, []byte("x"), 0o644)
	os.Chtimes(stale, now.Add(-2*time.Hour), now.Add(-2*time.Hour))
	n, err := Prune(dir, now.Add(-time.Hour))
	if err != nil || n != 2 {
		t.Errorf("pruned %d (%v), want 2", n, err)
	}
	for path, want := range map[string]bool{old: false, stale: false, fresh: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s exists=%v, want %v", path, err == nil, want)
		}
	}
}

func TestServiceDir(t *testing.T) {
	for in, want := range map[string]string{"web": "web", "a/b": "a_b", "..": "_..", "": "_", "ü": "__", "x.y-z_1": "x.y-z_1"} {
		if got := ServiceDir(in); got != want {
			t.Errorf("ServiceDir(%q) = %q, want %q", in, got, want)
		}
	}
}
