package procinfo

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// fakeProc describes one process of a fake /proc tree.
type fakeProc struct {
	comm  string
	ppid  int
	start uint64
	exe   string // symlink target; empty for no link
	args  []string
	env   []string
	uid   string // effective uid in status; empty for no status file
	// cgroup is the contents of /proc/<pid>/cgroup; empty for no file.
	cgroup string
}

// writeProc (re)creates /proc/<pid> under root.
func writeProc(t *testing.T, root string, pid uint32, p fakeProc) {
	t.Helper()
	dir := filepath.Join(root, strconv.FormatUint(uint64(pid), 10))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("%d (%s) S %d %d %d 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 %d 1000 100 18446744073709551615\n",
		pid, p.comm, p.ppid, pid, pid, p.start)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", stat)
	write("comm", p.comm+"\n")
	write("cmdline", joinNUL(p.args))
	write("environ", joinNUL(p.env))
	if p.uid != "" {
		write("status", fmt.Sprintf("Name:\t%s\nUid:\t%s\t%s\t%s\t%s\n", p.comm, p.uid, p.uid, p.uid, p.uid))
	}
	if p.cgroup != "" {
		write("cgroup", p.cgroup)
	}
	if p.exe != "" {
		if err := os.Symlink(p.exe, filepath.Join(dir, "exe")); err != nil {
			t.Fatal(err)
		}
	}
}

func removeProc(t *testing.T, root string, pid uint32) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(root, strconv.FormatUint(uint64(pid), 10))); err != nil {
		t.Fatal(err)
	}
}

func joinNUL(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "\x00") + "\x00"
}

// newTestResolver returns a resolver over an empty fake tree.
func newTestResolver(t *testing.T, cfg Config) (*Resolver, string) {
	t.Helper()
	root := t.TempDir()
	cfg.ProcRoot = root
	if cfg.MachineIDPath == "" {
		cfg.MachineIDPath = filepath.Join(root, "machine-id")
		if err := os.WriteFile(cfg.MachineIDPath, []byte("0123456789abcdef0123456789abcdef\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.HostName == "" {
		cfg.HostName = "node-1"
	}
	r, err := NewResolver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, root
}

func attrMap(res *resource.Resource) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range res.Attributes() {
		m[string(kv.Key)] = kv.Value
	}
	return m
}
