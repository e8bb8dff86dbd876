package selector

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// fakeProc writes /proc/PID/stat files: pid -> "comm ppid".
func fakeProc(t *testing.T, procs map[int]string) string {
	t.Helper()
	root := t.TempDir()
	for pid, v := range procs {
		comm, ppid, _ := strings.Cut(v, "|")
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		stat := strconv.Itoa(pid) + " (" + comm + ") S " + ppid + " 1 1 0 -1"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDescendantsOfATree(t *testing.T) {
	proc := fakeProc(t, map[int]string{
		1:  "init|0",
		10: "sh|1",
		11: "a b) S 99 (odd|10", // a name with spaces and parentheses
		12: "server|11",
		13: "other|1",
		14: "worker|12",
	})
	tree, err := parents(proc)
	if err != nil {
		t.Fatal(err)
	}
	if tree[11] != 10 {
		t.Fatalf("parent of 11 = %d, want 10 (name with ') S 99 ('", tree[11])
	}
	got := descendants(tree, 10)
	slices.Sort(got)
	if !slices.Equal(got, []int{11, 12, 14}) {
		t.Errorf("descendants of 10 = %v, want [11 12 14]", got)
	}
	if d := descendants(tree, 14); len(d) != 0 {
		t.Errorf("descendants of a leaf = %v", d)
	}
}
