package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/weftdev/weft/test/jaeger"
)

// jaegerBin is where the built Jaeger is kept.
func (d *demo) jaegerBin() string { return jaeger.Path(d.opts.root) }

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

// buildJaeger builds Jaeger unless it is there (test/jaeger).
func (d *demo) buildJaeger(ctx context.Context) error {
	out := d.jaegerBin()
	if _, err := os.Stat(out); err == nil {
		d.log.Info("prepared Jaeger "+jaeger.Version, "binary", d.rel(out), "reused", true)
		return nil
	}
	d.log.Info("building Jaeger " + jaeger.Version + " from the Go module proxy; once, it takes several minutes")
	began := time.Now()
	if _, err := jaeger.Build(ctx, d.opts.root); err != nil {
		return err
	}
	d.log.Info("built Jaeger "+jaeger.Version, "binary", d.rel(out), "took", time.Since(began).Round(time.Second))
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
