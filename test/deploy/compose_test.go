package deploy

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// javaServices are the demo's JVM services and whether each loads weft's
// Java agent.
var javaServices = map[string]bool{
	"backend":          true,
	"frontend":         true,
	"jfront":           true,
	"frontend-noagent": false,
}

const agentOption = "-javaagent:/opt/weft/weft-agent.jar"

// loadCompose loads a compose file as `docker compose` does — schema,
// interpolation (with env as the only environment), merge keys,
// normalisation and consistency checks — with every profile enabled.
func loadCompose(dir, name string, content []byte, env map[string]string) (*types.Project, error) {
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, name), Content: content}},
		Environment: types.Mapping(env),
	}, loader.WithProfiles([]string{"*"}))
}

func demoProject(t *testing.T) *types.Project {
	t.Helper()
	dir := repoPath(t, "demo")
	p, err := loadCompose(dir, "docker-compose.yml", readFile(t, filepath.Join(dir, "docker-compose.yml")), nil)
	if err != nil {
		t.Fatalf("demo/docker-compose.yml: %v", err)
	}
	return p
}

func service(t *testing.T, p *types.Project, name string) types.ServiceConfig {
	t.Helper()
	s, ok := p.Services[name]
	if !ok {
		t.Fatalf("demo/docker-compose.yml has no service %q", name)
	}
	return s
}

func environment(s types.ServiceConfig) map[string]string {
	env := map[string]string{}
	for k, v := range s.Environment {
		if v != nil {
			env[k] = *v
		}
	}
	return env
}

// buildPaths returns a service's absolute build context and Dockerfile.
func buildPaths(p *types.Project, s types.ServiceConfig) (contextDir, dockerfile string) {
	contextDir = s.Build.Context
	if !filepath.IsAbs(contextDir) {
		contextDir = filepath.Join(p.WorkingDir, contextDir)
	}
	dockerfile = s.Build.Dockerfile
	if dockerfile == "" {
		dockerfile = "Dockerfile"
	}
	if !filepath.IsAbs(dockerfile) {
		dockerfile = filepath.Join(contextDir, dockerfile)
	}
	return contextDir, dockerfile
}

func TestComposeLoads(t *testing.T) {
	p := demoProject(t)
	want := []string{"jaeger", "weft"}
	for s := range javaServices {
		want = append(want, s)
	}
	for _, s := range want {
		service(t, p, s)
	}
	// Profiles: the comparison frontend does not start unless asked for.
	if got := service(t, p, "frontend-noagent").Profiles; len(got) == 0 {
		t.Error("frontend-noagent starts by default; it belongs behind a profile")
	}
}

// The loader is live: broken compose files do not load.
func TestComposeLoaderCatchesMistakes(t *testing.T) {
	dir := repoPath(t, "demo")
	src := string(readFile(t, filepath.Join(dir, "docker-compose.yml")))
	for name, mutate := range map[string]func(string) string{
		"unknown key": func(s string) string {
			return strings.Replace(s, "    privileged: true", "    privilegd: true", 1)
		},
		"wrong type": func(s string) string {
			return strings.Replace(s, "    privileged: true", "    privileged: [yes]", 1)
		},
		"dependency on no service": func(s string) string {
			return strings.Replace(s, "      - jaeger\n", "      - jaegr\n", 1)
		},
		"unterminated interpolation": func(s string) string {
			return strings.Replace(s, "${WEFT_LOG_LEVEL:-info}", "${WEFT_LOG_LEVEL:-info", 1)
		},
		"bad YAML": func(s string) string { return strings.Replace(s, "services:", "services:\n\t- x", 1) },
	} {
		broken := mutate(src)
		if broken == src {
			t.Errorf("%s: the mutation did not apply; update this test", name)
			continue
		}
		_, err := loadCompose(dir, "docker-compose.yml", []byte(broken), nil)
		t.Logf("%s: %v", name, err)
		if err == nil {
			t.Errorf("%s: loaded without error", name)
		}
	}
}

// Nothing is published beyond the loopback interface.
func TestComposePortsOnLoopback(t *testing.T) {
	p := demoProject(t)
	for name, s := range p.Services {
		for _, port := range s.Ports {
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s: port %s:%d is published on %q, want 127.0.0.1", name, port.Published, port.Target, port.HostIP)
			}
		}
	}
}

// Pulled images name a version: `latest` or no tag changes under the demo.
func TestComposeImagesPinned(t *testing.T) {
	p := demoProject(t)
	for name, s := range p.Services {
		if s.Build != nil {
			continue // built here
		}
		ref := s.Image
		if i := strings.LastIndex(ref, "@"); i >= 0 {
			continue // by digest
		}
		tag := ""
		if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
			tag = ref[i+1:]
		}
		if tag == "" || tag == "latest" {
			t.Errorf("%s: image %q is not pinned to a version", name, ref)
		}
	}
}

// Each build names an existing Dockerfile, and a stage of it as target.
func TestComposeBuilds(t *testing.T) {
	p := demoProject(t)
	root := repoRoot(t)
	for name, s := range p.Services {
		if s.Build == nil {
			continue
		}
		ctxDir, df := buildPaths(p, s)
		if filepath.Clean(ctxDir) != root {
			t.Errorf("%s: build context %s, want the repository root (the Dockerfiles' COPY paths assume it)", name, ctxDir)
		}
		if _, err := os.Stat(df); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		d := loadDockerfile(t, df)
		if s.Build.Target != "" {
			if _, ok := d.stage(s.Build.Target); !ok {
				t.Errorf("%s: target %q is no stage of %s", name, s.Build.Target, filepath.Base(df))
			}
		}
	}
}

func TestComposeWeftService(t *testing.T) {
	p := demoProject(t)
	w := service(t, p, "weft")
	if !w.Privileged && len(w.CapAdd) == 0 {
		t.Error("weft: neither privileged nor given capabilities: it cannot load BPF")
	}
	if w.Pid != "host" {
		t.Errorf("weft: pid %q, want host (it must see the other containers' processes)", w.Pid)
	}
	if w.Cgroup != "host" {
		t.Errorf("weft: cgroup %q, want host (sockops must attach to the host's root cgroup)", w.Cgroup)
	}
	mounts := map[string]types.ServiceVolumeConfig{}
	for _, v := range w.Volumes {
		mounts[v.Target] = v
	}
	for _, path := range []string{"/sys/kernel/btf", "/sys/kernel/tracing", "/sys/kernel/debug", "/sys/fs/cgroup", "/sys/fs/bpf"} {
		v, ok := mounts[path]
		switch {
		case !ok:
			t.Errorf("weft: %s is not mounted", path)
		case v.Type != types.VolumeTypeBind || v.Source != path:
			t.Errorf("weft: %s: want a bind mount of the host's %s, got %s %s", path, path, v.Type, v.Source)
		}
	}
	if v, ok := mounts["/sys/kernel/btf"]; ok && !v.ReadOnly {
		t.Error("weft: /sys/kernel/btf should be mounted read-only")
	}

	env := environment(w)
	// Spans go to a service of this project.
	host, _, err := net.SplitHostPort(env["OTEL_EXPORTER_OTLP_ENDPOINT"])
	if err != nil {
		t.Errorf("weft: OTEL_EXPORTER_OTLP_ENDPOINT: %v", err)
	} else if _, ok := p.Services[host]; !ok {
		t.Errorf("weft: OTEL_EXPORTER_OTLP_ENDPOINT names %q, no service of the demo", host)
	}
	var args []string
	if len(w.Command) > 0 {
		args = runArgs(t, "weft", w.Command)
	} else if w.Build != nil {
		_, path := buildPaths(p, w)
		df := loadDockerfile(t, path)
		target := w.Build.Target
		if target == "" {
			target = df.stages[len(df.stages)-1].Name
		}
		argv := df.command(target)
		if len(argv) > 0 {
			argv = argv[1:] // the weft binary
		}
		args = runArgs(t, "weft image", argv)
	}
	checkWeftSettings(t, "weft", env, args)
	// The same with the documented switch turned on.
	on := map[string]string{"WEFT_JAVA_AGENT": "attach", "WEFT_LOG_LEVEL": "debug"}
	if p2, err := loadCompose(p.WorkingDir, "docker-compose.yml", readFile(t, filepath.Join(p.WorkingDir, "docker-compose.yml")), on); err != nil {
		t.Error(err)
	} else {
		checkWeftSettings(t, "weft with WEFT_JAVA_AGENT=attach", environment(p2.Services["weft"]), args)
	}
}

// weft's selection (WEFT_EXE) takes every Java service of the demo and
// nothing else whose command line is known.
func TestComposeSelectionMatchesServices(t *testing.T) {
	p := demoProject(t)
	exe := environment(service(t, p, "weft"))["WEFT_EXE"]
	if exe == "" {
		return // every process is traced
	}
	re, err := regexp.Compile(exe)
	if err != nil {
		t.Fatalf("WEFT_EXE: %v", err)
	}
	for name, s := range p.Services {
		if name == "weft" {
			continue
		}
		argv := append(append([]string{}, s.Entrypoint...), s.Command...)
		if len(s.Entrypoint) == 0 && s.Build != nil {
			_, path := buildPaths(p, s)
			argv = loadDockerfile(t, path).command(s.Build.Target)
		}
		if len(argv) == 0 {
			continue // the image's own command, unknown here
		}
		cmdline := strings.Join(argv, " ")
		_, java := javaServices[name]
		if got := re.MatchString(cmdline); got != java {
			t.Errorf("%s: WEFT_EXE %q matches %q: %v, want %v", name, exe, cmdline, got, java)
		}
	}
}

func TestComposeJavaServices(t *testing.T) {
	p := demoProject(t)
	names := map[string]string{}
	for name, agent := range javaServices {
		s := service(t, p, name)
		env := environment(s)
		opts := strings.Fields(env["JAVA_TOOL_OPTIONS"])
		has := func(o string) bool {
			for _, x := range opts {
				if x == o {
					return true
				}
			}
			return false
		}
		if has(agentOption) != agent {
			t.Errorf("%s: JAVA_TOOL_OPTIONS %q: agent loaded %v, want %v", name, env["JAVA_TOOL_OPTIONS"], !agent, agent)
		}
		if !has("-XX:+PreserveFramePointer") {
			t.Errorf("%s: JAVA_TOOL_OPTIONS lacks -XX:+PreserveFramePointer", name)
		}
		if env["BIND"] != "0.0.0.0" {
			t.Errorf("%s: BIND=%q: the service is unreachable from other containers", name, env["BIND"])
		}
		svcName := env["OTEL_SERVICE_NAME"]
		if svcName == "" {
			t.Errorf("%s: no OTEL_SERVICE_NAME", name)
		} else if other, dup := names[svcName]; dup {
			t.Errorf("%s and %s both report OTEL_SERVICE_NAME=%s", name, other, svcName)
		}
		names[svcName] = name
		// The container listens where its published ports point.
		for _, port := range s.Ports {
			if env["PORT"] != "" && env["PORT"] != strconv.FormatUint(uint64(port.Target), 10) {
				t.Errorf("%s: publishes container port %d, but PORT=%s", name, port.Target, env["PORT"])
			}
		}
		if u := env["BACKEND_URL"]; u != "" {
			checkBackendURL(t, p, name, u)
		}
	}
}

func checkBackendURL(t *testing.T, p *types.Project, from, raw string) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Errorf("%s: BACKEND_URL: %v", from, err)
		return
	}
	target, ok := p.Services[u.Hostname()]
	if !ok {
		t.Errorf("%s: BACKEND_URL %s names no service", from, raw)
		return
	}
	if port := environment(target)["PORT"]; port != u.Port() {
		t.Errorf("%s: BACKEND_URL %s, but %s listens on PORT=%s", from, raw, u.Hostname(), port)
	}
}
