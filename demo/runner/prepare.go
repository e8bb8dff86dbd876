package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Jaeger is built from the Go module proxy at this version: no Docker, no
// download of a release archive, and the same build on every machine.
const (
	jaegerModule  = "github.com/jaegertracing/jaeger"
	jaegerVersion = "v1.76.0"
)

// jaegerBin is where the built Jaeger is kept; the version in the name
// makes a re-run reuse it and a version bump rebuild it.
func (d *demo) jaegerBin() string {
	return filepath.Join(d.opts.root, ".cache", "bin", "jaeger-"+jaegerVersion)
}

func (d *demo) agentJar() string {
	return filepath.Join(d.opts.root, "pkg", "javaagent", "weft-agent.jar")
}

func (d *demo) serviceJar(module string) string {
	return filepath.Join(d.opts.root, "demo", "services", module, "target", module+".jar")
}

// prepare builds what is missing or stale. Every step is quick when its
// output is up to date, so a re-run costs seconds.
func (d *demo) prepare(ctx context.Context) error {
	if d.opts.weft == filepath.Join(d.opts.root, "bin", "weft") {
		if err := d.step(ctx, "weft (make build)", "make", "--no-print-directory", "build"); err != nil {
			return err
		}
	}
	if err := d.step(ctx, "the Java agent", "bash", "scripts/build-agent.sh"); err != nil {
		return err
	}
	if err := d.step(ctx, "the demo services", "bash", "scripts/build-demo.sh"); err != nil {
		return err
	}
	return d.buildJaeger(ctx)
}

// step runs one build command from the repository root; its output is
// shown only when it fails (or with -v).
func (d *demo) step(ctx context.Context, what, name string, args ...string) error {
	began := time.Now()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = d.opts.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("build %s: %s: %w\n%s", what, strings.Join(cmd.Args, " "), err, out)
	}
	d.log.Info("prepared "+what, "took", time.Since(began).Round(time.Millisecond))
	if d.opts.verbose && len(out) > 0 {
		fmt.Fprintf(os.Stderr, "%s", out)
	}
	return nil
}

// buildJaeger builds Jaeger's all-in-one binary unless it is there.
// `go install module/cmd/jaeger@version` refuses modules with replace
// directives, as Jaeger's has, so the module is downloaded and built in
// place (the module cache is read-only; go build only reads it).
func (d *demo) buildJaeger(ctx context.Context) error {
	out := d.jaegerBin()
	if _, err := os.Stat(out); err == nil {
		d.log.Info("prepared Jaeger "+jaegerVersion, "binary", d.rel(out), "reused", true)
		return nil
	}
	d.log.Info("building Jaeger " + jaegerVersion + " from the Go module proxy; once, it takes several minutes")
	began := time.Now()
	// Outside weft's module, so that weft's go.mod and go.sum stay untouched.
	dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", jaegerModule+"@"+jaegerVersion)
	dl.Dir = os.TempDir()
	dl.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	dl.Stderr = &stderr
	b, err := dl.Output()
	if err != nil {
		return fmt.Errorf("download %s@%s: %w\n%s", jaegerModule, jaegerVersion, err, stderr.Bytes())
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(b, &mod); err != nil {
		return fmt.Errorf("download %s@%s: read go mod download's answer: %w", jaegerModule, jaegerVersion, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return fmt.Errorf("download %s@%s: %s", jaegerModule, jaegerVersion, mod.Error)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("build Jaeger: %w", err)
	}
	tmp := out + ".partial"
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp, "./cmd/jaeger")
	build.Dir = mod.Dir
	// Jaeger's own go.mod and go.sum decide its dependencies; a GOFLAGS of
	// the caller's such as -mod=vendor would not apply there.
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("build Jaeger in %s: %w\n%s", mod.Dir, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("build Jaeger: %w", err)
	}
	d.log.Info("built Jaeger "+jaegerVersion, "binary", d.rel(out), "took", time.Since(began).Round(time.Second))
	return nil
}

// checkArtefacts makes sure everything the demo runs is there; with
// -no-build nothing else would have said so.
func (d *demo) checkArtefacts() error {
	var missing []string
	for _, f := range []string{d.opts.weft, d.agentJar(), d.serviceJar("backend"), d.serviceJar("frontend"),
		d.serviceJar("jfront"), d.jaegerBin()} {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, d.rel(f))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s (run without -no-build to build them)", strings.Join(missing, ", "))
	}
	if _, err := exec.LookPath(d.opts.java); err != nil {
		return fmt.Errorf("java launcher %q: %w", d.opts.java, err)
	}
	return nil
}

// rel shows a path relative to the repository root when it is inside it.
func (d *demo) rel(path string) string {
	r, err := filepath.Rel(d.opts.root, path)
	if err != nil || strings.HasPrefix(r, "..") {
		return path
	}
	return r
}

// hasProfiler reports whether this weft has the span profiler: weft run
// --profile-dir and weft profile --span.
func (d *demo) hasProfiler(ctx context.Context) bool {
	help := func(args ...string) string {
		out, _ := exec.CommandContext(ctx, d.opts.weft, args...).CombinedOutput() // -h exits non-zero
		return string(out)
	}
	return strings.Contains(help("run", "-h"), "-profile-dir") && strings.Contains(help("profile", "-h"), "-span")
}
