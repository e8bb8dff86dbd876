package profiler

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPprofTool opens a written profile with `go tool pprof` and focuses
// on one span by its label: only that span's functions may show.
func TestPprofTool(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not installed")
	}
	path := filepath.Join(t.TempDir(), "checkout.pb.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := testProfiles(t)["checkout"].Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		focus      string
		want, gone []string
	}{
		{"span_id=" + spanA.String(), []string{"main.compute", "main.handleA", "main.main"}, []string{"handleB", "json.Marshal", "vfs_read", "gcBgMarkWorker"}},
		{"span_id=" + spanB.String(), []string{"main.handleB", "encoding/json.Marshal", "vfs_read", "libc.so.6+0x1234"}, []string{"handleA", "compute", "gcBgMarkWorker"}},
		{"span_id=" + NoSpan, []string{"runtime.gcBgMarkWorker"}, []string{"main.main", "handle"}},
		{"span_name=GET /a", []string{"main.compute"}, []string{"handleB"}},
	}
	for _, c := range cases {
		cmd := exec.Command(gobin, "tool", "pprof", "-top", "-sample_index=samples", "-tagfocus", c.focus, path)
		cmd.Env = append(os.Environ(), "PPROF_TMPDIR="+t.TempDir(), "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pprof -tagfocus %s: %v\n%s", c.focus, err, out)
		}
		text := string(out)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("-tagfocus %s: %s missing from\n%s", c.focus, w, text)
			}
		}
		for _, g := range c.gone {
			if strings.Contains(text, g) {
				t.Errorf("-tagfocus %s: %s shown in\n%s", c.focus, g, text)
			}
		}
	}
}
