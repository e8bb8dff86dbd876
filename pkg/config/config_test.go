package config

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPrecedence(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "weft.yaml")
	yml := "probes: tracepoint\nruntime_hooks: off\ncapture_bytes: 1024\nselect:\n  ports: [8080]\notlp:\n  endpoint: file:4317\nlog_level: warn\n"
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "env:4317",
		"OTEL_EXPORTER_OTLP_HEADERS":  "api-key=a%20b,x=y",
		"WEFT_CAPTURE_BYTES":          "2048",
		"WEFT_SOCKET_TABLE_SIZE":      "4096",
	}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fl := RegisterFlags(fs)
	if err := fs.Parse([]string{"--capture-bytes=300", "--exe=python"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, func(k string) string { return env[k] }, fs, fl)
	if err != nil {
		t.Fatal(err)
	}
	if c.RuntimeHooks != "off" { // file over default
		t.Errorf("runtime hooks = %q", c.RuntimeHooks)
	}
	if c.Probes != "tracepoint" { // file over default
		t.Errorf("probes = %q", c.Probes)
	}
	if c.OTLP.Endpoint != "env:4317" { // env over file
		t.Errorf("endpoint = %q", c.OTLP.Endpoint)
	}
	if c.CaptureBytes != 300 { // flag over env over file
		t.Errorf("capture = %d", c.CaptureBytes)
	}
	if c.SocketTableSize != 4096 { // env over default
		t.Errorf("socket table = %d", c.SocketTableSize)
	}
	if c.Select.Exe != "python" || len(c.Select.Ports) != 1 || c.Select.Ports[0] != 8080 {
		t.Errorf("select = %+v", c.Select)
	}
	if c.OTLP.Headers["api-key"] != "a b" || c.OTLP.Headers["x"] != "y" {
		t.Errorf("headers = %v", c.OTLP.Headers)
	}
	if c.LogLevel != "warn" || c.RequestTimeout != 2*time.Minute {
		t.Errorf("log level %q, timeout %v", c.LogLevel, c.RequestTimeout)
	}
}

func TestValidateRejects(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"probes":  func(c *Config) { c.Probes = "fentry" },
		"capture": func(c *Config) { c.CaptureBytes = 8192 },
		"sockets": func(c *Config) { c.SocketTableSize = 100 },
		"exe":     func(c *Config) { c.Select.Exe = "(" },
		"port":    func(c *Config) { c.Select.Ports = []int{70000} },
		"level":   func(c *Config) { c.LogLevel = "loud" },
		"hooks":   func(c *Config) { c.RuntimeHooks = "maybe" },
		"tls":     func(c *Config) { c.TLS = "maybe" },
		"procs":   func(c *Config) { c.MaxProcs = -1 },
	} {
		c := Default()
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: invalid config accepted", name)
		}
	}
}

// max_procs is 1 unless said, and the usual precedence decides it.
func TestMaxProcsPrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "weft.yaml")
	if err := os.WriteFile(path, []byte("max_procs: 2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file  string
		env   string
		flags []string
		want  int
	}{
		{"", "", nil, 1},
		{path, "", nil, 2},
		{path, "0", nil, 0},
		{path, "0", []string{"--max-procs=3"}, 3},
	} {
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		fl := RegisterFlags(fs)
		if err := fs.Parse(c.flags); err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		if c.env != "" {
			env["WEFT_MAX_PROCS"] = c.env
		}
		got, err := Load(c.file, func(k string) string { return env[k] }, fs, fl)
		if err != nil {
			t.Fatal(err)
		}
		if got.MaxProcs != c.want {
			t.Errorf("file %q, env %q, flags %v: max_procs %d, want %d", c.file, c.env, c.flags, got.MaxProcs, c.want)
		}
	}
}

func TestUnknownYAMLFieldIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "w.yaml")
	os.WriteFile(path, []byte("probs: kprobe\n"), 0o600)
	if _, err := Load(path, func(string) string { return "" }, nil, nil); err == nil {
		t.Fatal("misspelt key accepted")
	}
}

func TestCgroupAndContainerSelectors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "weft.yaml")
	yml := "select:\n  cgroups: [/sys/fs/cgroup/file]\n  containers: [aaaaaaaaaaaa]\n"
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"WEFT_CGROUPS": "/sys/fs/cgroup/env1, /sys/fs/cgroup/env2"}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fl := RegisterFlags(fs)
	if err := fs.Parse([]string{"--container=bbbbbbbbbbbb,cccccccccccc", "--container", "dddddddddddd"}); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, func(k string) string { return env[k] }, fs, fl)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Select.Cgroups; len(got) != 2 || got[0] != "/sys/fs/cgroup/env1" || got[1] != "/sys/fs/cgroup/env2" {
		t.Errorf("cgroups = %q, want the environment's two (over the file's)", got)
	}
	if got := c.Select.Containers; len(got) != 3 || got[0] != "bbbbbbbbbbbb" || got[2] != "dddddddddddd" {
		t.Errorf("containers = %q, want the flags' three (repeated and comma-separated)", got)
	}
	if c.Select.All() {
		t.Error("a cgroup selection counts as a selection")
	}
}
