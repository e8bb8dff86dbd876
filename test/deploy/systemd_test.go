package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const (
	unitName = "weft.service"
	// systemd-analyze security's exposure (0-100, here 10× its 0.0-10.0
	// scale) that the unit must stay at or below; it is 3.9 with the
	// hardening in place, and the tracer's needs (root, BPF, host network
	// and /proc) keep it from going much lower.
	maxExposure = 45
)

func unitPath(t *testing.T) string { return repoPath(t, "deploy", "systemd", unitName) }

// unitFile is a parsed systemd unit: section → key → values in order.
type unitFile map[string]map[string][]string

func parseUnit(content []byte) (unitFile, error) {
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(content))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case strings.HasSuffix(line, `\`):
			return nil, fmt.Errorf("line %d: continuation lines are not parsed here; keep settings on one line", n)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				return nil, fmt.Errorf("line %d: %q is no setting of a section", n, line)
			}
			k = strings.TrimSpace(k)
			u[section][k] = append(u[section][k], strings.TrimSpace(v))
		}
	}
	return u, sc.Err()
}

func (u unitFile) last(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// parseEnvFile reads a systemd EnvironmentFile: KEY=value lines, comments.
func parseEnvFile(content []byte) (map[string]string, error) {
	env := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(content))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" || strings.ContainsAny(k, " \t") {
			return nil, fmt.Errorf("line %d: %q is not KEY=value", n, line)
		}
		if strings.HasPrefix(k, "export ") {
			return nil, fmt.Errorf("line %d: systemd does not take `export`", n)
		}
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		env[k] = v
	}
	return env, sc.Err()
}

// linuxCapabilities are the capability names the kernel has (systemd
// silently ignores a name it does not know, so a typo drops a capability).
var linuxCapabilities = strings.Fields(`CAP_CHOWN CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH
	CAP_FOWNER CAP_FSETID CAP_KILL CAP_SETGID CAP_SETUID CAP_SETPCAP CAP_LINUX_IMMUTABLE
	CAP_NET_BIND_SERVICE CAP_NET_BROADCAST CAP_NET_ADMIN CAP_NET_RAW CAP_IPC_LOCK
	CAP_IPC_OWNER CAP_SYS_MODULE CAP_SYS_RAWIO CAP_SYS_CHROOT CAP_SYS_PTRACE CAP_SYS_PACCT
	CAP_SYS_ADMIN CAP_SYS_BOOT CAP_SYS_NICE CAP_SYS_RESOURCE CAP_SYS_TIME CAP_SYS_TTY_CONFIG
	CAP_MKNOD CAP_LEASE CAP_AUDIT_WRITE CAP_AUDIT_CONTROL CAP_SETFCAP CAP_MAC_OVERRIDE
	CAP_MAC_ADMIN CAP_SYSLOG CAP_WAKE_ALARM CAP_BLOCK_SUSPEND CAP_AUDIT_READ CAP_PERFMON
	CAP_BPF CAP_CHECKPOINT_RESTORE`)

// unitProblems checks what weft needs of its unit and environment file.
func unitProblems(t *testing.T, unit, envFile []byte) []string {
	t.Helper()
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	u, err := parseUnit(unit)
	if err != nil {
		return []string{unitName + ": " + err.Error()}
	}
	get := func(k string) string { return u.last("Service", k) }
	for k, want := range map[string]string{
		"EnvironmentFile": "/etc/weft/weft.env",
		"Restart":         "on-failure",
		"NoNewPrivileges": "yes",
		"ProtectSystem":   "strict",
	} {
		if got := get(k); got != want {
			fail("%s=%q, want %q", k, got, want)
		}
	}
	if u.last("Install", "WantedBy") == "" {
		fail("no [Install] WantedBy: `systemctl enable` would do nothing")
	}
	known := map[string]bool{}
	for _, c := range linuxCapabilities {
		known[c] = true
	}
	caps := map[string]bool{}
	for _, c := range strings.Fields(get("CapabilityBoundingSet")) {
		if !known[c] {
			fail("CapabilityBoundingSet: %s is no capability", c)
		}
		caps[c] = true
	}
	for _, want := range []string{"CAP_BPF", "CAP_PERFMON", "CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_SYS_RESOURCE"} {
		if !caps[want] {
			fail("CapabilityBoundingSet lacks %s", want)
		}
	}
	if get("User") != "" && get("User") != "root" {
		fail("User=%s: weft needs root's uid for the kernel's BPF and ptrace checks", get("User"))
	}
	// Hardening that would blind weft.
	for k, bad := range map[string][]string{
		"PrivateNetwork": {"yes", "true"},                         // OTLP export, /proc/net for --port
		"PrivateUsers":   {"yes", "true"},                         // capabilities in the init namespace
		"ProtectProc":    {"invisible", "noaccess", "ptraceable"}, // other processes' /proc
		"ProcSubset":     {"pid"},                                 // /proc/kallsyms, /proc/net
		"PrivatePIDs":    {"yes", "true"},                         // the host's processes
		"DynamicUser":    {"yes", "true"},                         // root
	} {
		for _, b := range bad {
			if get(k) == b {
				fail("%s=%s keeps weft from seeing the host", k, b)
			}
		}
	}

	argv := strings.Fields(get("ExecStart"))
	if len(argv) < 2 || filepath.Base(argv[0]) != "weft" || argv[1] != "run" {
		fail("ExecStart=%q, want weft run ...", get("ExecStart"))
		return problems
	}
	env, err := parseEnvFile(envFile)
	if err != nil {
		fail("weft.env: %v", err)
		return problems
	}
	if err := weftSettingsError(t, env, argv[2:]); err != nil {
		fail("weft.service with weft.env: %v", err)
	}
	if env["OTEL_EXPORTER_OTLP_ENDPOINT"] == "" {
		fail("weft.env sets no OTEL_EXPORTER_OTLP_ENDPOINT: spans would go to the journal")
	}
	return problems
}

func TestSystemdUnitSettings(t *testing.T) {
	for _, p := range unitProblems(t, readFile(t, unitPath(t)), readFile(t, repoPath(t, "deploy", "systemd", "weft.env"))) {
		t.Error(p)
	}
}

func TestSystemdUnitChecksCatchMistakes(t *testing.T) {
	unit := string(readFile(t, unitPath(t)))
	env := readFile(t, repoPath(t, "deploy", "systemd", "weft.env"))
	for name, mutate := range map[string]func(string) string{
		"misspelt capability": func(s string) string {
			return strings.Replace(s, "CapabilityBoundingSet=CAP_BPF", "CapabilityBoundingSet=CAP_BFP", 1)
		},
		"private network":    func(s string) string { return strings.Replace(s, "[Service]\n", "[Service]\nPrivateNetwork=yes\n", 1) },
		"unknown run flag":   func(s string) string { return strings.Replace(s, "bin/weft run", "bin/weft run --exe-regex=java", 1) },
		"no EnvironmentFile": func(s string) string { return strings.Replace(s, "EnvironmentFile=", "#EnvironmentFile=", 1) },
	} {
		broken := mutate(unit)
		if broken == unit {
			t.Errorf("%s: the mutation did not apply; update this test", name)
			continue
		}
		if len(unitProblems(t, []byte(broken), env)) == 0 {
			t.Errorf("%s: passed", name)
		}
	}
}

// The env parser and weft's loader reject what weft would reject.
func TestSystemdEnvChecksCatchMistakes(t *testing.T) {
	src := string(readFile(t, repoPath(t, "deploy", "systemd", "weft.env")))
	for name, mutate := range map[string]func(string) string{
		"misspelt variable": func(s string) string {
			return strings.Replace(s, "WEFT_METRICS_ADDR=", "WEFT_METRIC_ADDR=", 1)
		},
		"bad value": func(s string) string { return strings.Replace(s, "WEFT_JAVA_AGENT=off", "WEFT_JAVA_AGENT=yes", 1) },
		"export":    func(s string) string { return strings.Replace(s, "WEFT_LOG_LEVEL=", "export WEFT_LOG_LEVEL=", 1) },
	} {
		broken := mutate(src)
		if broken == src {
			t.Errorf("%s: the mutation did not apply; update this test", name)
			continue
		}
		env, err := parseEnvFile([]byte(broken))
		if err == nil {
			err = weftSettingsError(t, env, nil)
		}
		if err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

func systemdAnalyze(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
	}
	return path
}

// stageUnit writes the unit to a temporary directory with ExecStart's binary
// replaced by an executable that exists here, since verify checks it.
func stageUnit(t *testing.T, content []byte) string {
	t.Helper()
	dir := t.TempDir()
	fake := filepath.Join(dir, "weft")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	staged := bytes.ReplaceAll(content, []byte("ExecStart=/usr/local/bin/weft "), []byte("ExecStart="+fake+" "))
	if bytes.Equal(staged, content) {
		t.Fatal("ExecStart is not /usr/local/bin/weft; update stageUnit")
	}
	p := filepath.Join(dir, unitName)
	if err := os.WriteFile(p, staged, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// verifyUnit runs systemd-analyze verify. Unknown keys and bad values are
// only warnings to it (exit 0), so any message about the unit is an error.
func verifyUnit(t *testing.T, tool, path string) error {
	t.Helper()
	out, err := exec.Command(tool, "verify", "--man=no", path).CombinedOutput()
	var own []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(l, unitName) {
			own = append(own, l)
		}
	}
	if err != nil {
		return fmt.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	if len(own) > 0 {
		return fmt.Errorf("systemd-analyze verify warns:\n%s", strings.Join(own, "\n"))
	}
	return nil
}

func TestSystemdAnalyzeVerify(t *testing.T) {
	tool := systemdAnalyze(t)
	if err := verifyUnit(t, tool, stageUnit(t, readFile(t, unitPath(t)))); err != nil {
		t.Error(err)
	}
}

func TestSystemdVerifyCatchesMistakes(t *testing.T) {
	tool := systemdAnalyze(t)
	src := string(readFile(t, unitPath(t)))
	for name, mutate := range map[string]func(string) string{
		"unknown key": func(s string) string { return strings.Replace(s, "ProtectSystem=strict", "ProtectSystm=strict", 1) },
		"bad value":   func(s string) string { return strings.Replace(s, "ProtectSystem=strict", "ProtectSystem=bogus", 1) },
		"relative ExecStart": func(s string) string {
			return strings.Replace(s, "ExecStart=/usr/local/bin/weft run", "ExecStart=weft-missing run", 1)
		},
	} {
		broken := mutate(src)
		if broken == src {
			t.Errorf("%s: the mutation did not apply; update this test", name)
			continue
		}
		dir := t.TempDir()
		p := filepath.Join(dir, unitName)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(broken, "/usr/local/bin/weft", "/bin/true")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := verifyUnit(t, tool, p); err == nil {
			t.Errorf("%s: passed systemd-analyze verify", name)
		}
	}
}

// The hardening stays: systemd-analyze's exposure score of the unit.
func TestSystemdAnalyzeSecurity(t *testing.T) {
	tool := systemdAnalyze(t)
	p := stageUnit(t, readFile(t, unitPath(t)))
	out, err := exec.Command(tool, "security", "--offline=true", fmt.Sprintf("--threshold=%d", maxExposure), "--no-pager", p).CombinedOutput()
	if err != nil && bytes.Contains(out, []byte("unrecognized option")) {
		t.Skipf("this systemd-analyze cannot score unit files offline (systemd 250+): %s", bytes.TrimSpace(out))
	}
	summary := ""
	if i := bytes.LastIndex(out, []byte("Overall exposure")); i >= 0 {
		summary = string(bytes.TrimSpace(out[i:]))
	}
	if err != nil {
		t.Errorf("exposure above %d.%d: %s\n%s", maxExposure/10, maxExposure%10, summary, out)
		return
	}
	t.Log(summary)
}
