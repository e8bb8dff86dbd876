package qemu

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// requireVM gates the boot tests: they need kernels.sh to have run (apt as
// root) and take seconds per boot. Skipping is allowed only for a non-root
// user who has not set WEFT_REQUIRE_PRIVILEGED=1; otherwise any missing
// piece fails the test.
func requireVM(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 || os.Getenv("WEFT_REQUIRE_PRIVILEGED") == "1" {
		return
	}
	t.Skip("boots kernels under QEMU: run as root or set WEFT_REQUIRE_PRIVILEGED=1")
}

var (
	kernelsOnce sync.Once
	kernelsList []Kernel
	kernelsErr  error
)

// testKernels returns the default kernels, fetching them once per test
// binary.
func testKernels(t *testing.T) []Kernel {
	t.Helper()
	requireVM(t)
	kernelsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		start := time.Now()
		kernelsList, kernelsErr = Kernels(ctx)
		t.Logf("kernels.sh took %s", time.Since(start).Round(time.Millisecond))
	})
	if kernelsErr != nil {
		t.Fatalf("locate kernels: %v", kernelsErr)
	}
	return kernelsList
}

// buildGuest compiles testdata/<name> as a static binary for the guest.
func buildGuest(t *testing.T, name string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, "./testdata/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build testdata/%s: %v\n%s", name, err, b)
	}
	return out
}

// boot runs cfg and fails the test on a harness error, logging the timing
// and, on failure or with -v, the console.
func boot(t *testing.T, cfg Config) Result {
	t.Helper()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("boot to power-off: %s (accel %s)", res.Duration.Round(time.Millisecond), res.Accel)
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("console:\n%s", res.Output)
		}
	})
	return res
}
