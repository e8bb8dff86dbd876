package qemu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// Kernel is a bootable kernel image fetched by kernels.sh.
type Kernel struct {
	// Release is the kernel release (uname -r), e.g. 6.1.0-57-amd64.
	Release string
	// Path is the host path of the vmlinuz image.
	Path string
}

// Kernels runs kernels.sh, which installs qemu and busybox-static when
// missing and downloads Debian kernels into test/qemu/.cache. specs are
// series ("6.1") or package names; none means the script's default (the
// newest 6.1 and 6.12). Cached kernels cost no download.
func Kernels(ctx context.Context, specs ...string) ([]Kernel, error) {
	script, err := scriptPath()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, specs...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kernels.sh %s: %w\n%s", strings.Join(specs, " "), err, stderr.String())
	}
	var ks []Kernel
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		if line == "" {
			continue
		}
		ks = append(ks, Kernel{Release: filepath.Base(filepath.Dir(line)), Path: line})
	}
	if len(ks) == 0 {
		return nil, fmt.Errorf("kernels.sh printed no kernels\n%s", stderr.String())
	}
	return ks, nil
}

// scriptPath finds kernels.sh next to this source file: callers are tests
// in other packages of the module, whose working directory differs.
func scriptPath() (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("kernels.sh: cannot locate the qemu package source")
	}
	p := filepath.Join(filepath.Dir(self), "kernels.sh")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("kernels.sh (built with -trimpath?): %w", err)
	}
	return p, nil
}
