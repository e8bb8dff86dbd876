// Package jaeger builds the Jaeger that the demo (demo/runner) and the
// end-to-end tests run: one pinned version, from the Go module proxy, so
// there is no Docker, no release archive to download, and the same build
// on every machine.
package jaeger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Jaeger's module and the version built.
const (
	Module  = "github.com/jaegertracing/jaeger"
	Version = "v1.76.0"
)

// Path is where the built Jaeger is kept below the repository root; the
// version in the name makes a re-run reuse it and a version bump rebuild it.
func Path(repoRoot string) string {
	return filepath.Join(repoRoot, ".cache", "bin", "jaeger-"+Version)
}

// Build builds Jaeger's all-in-one binary unless it is there already, and
// returns its path. The first build takes several minutes.
//
// `go install module/cmd/jaeger@version` refuses modules with replace
// directives, as Jaeger's has, so the module is downloaded and built in
// place (the module cache is read-only; go build only reads it).
func Build(ctx context.Context, repoRoot string) (string, error) {
	out := Path(repoRoot)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	// Outside weft's module, so that weft's go.mod and go.sum stay untouched.
	dl := exec.CommandContext(ctx, "go", "mod", "download", "-json", Module+"@"+Version)
	dl.Dir = os.TempDir()
	dl.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	dl.Stderr = &stderr
	b, err := dl.Output()
	if err != nil {
		return "", fmt.Errorf("download %s@%s: %w\n%s", Module, Version, err, stderr.Bytes())
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(b, &mod); err != nil {
		return "", fmt.Errorf("download %s@%s: read go mod download's answer: %w", Module, Version, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		return "", fmt.Errorf("download %s@%s: %s", Module, Version, mod.Error)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("build Jaeger: %w", err)
	}
	// A name of this process's own, so that two builds at once (the demo
	// and a test) do not write one file.
	tmp := out + ".partial-" + strconv.Itoa(os.Getpid())
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", tmp, "./cmd/jaeger")
	build.Dir = mod.Dir
	// Jaeger's own go.mod and go.sum decide its dependencies; a GOFLAGS of
	// the caller's such as -mod=vendor would not apply there.
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build Jaeger in %s: %w\n%s", mod.Dir, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("build Jaeger: %w", err)
	}
	return out, nil
}
