package qemu

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// guestTests are the end-to-end tests (test/e2e) that run inside the
// guests: they need no curl or Python, which the initramfs lacks; nginx
// comes with its libraries (guestNginx). guestCoreTests are those of them
// whose kernel side differs between attach paths (the socket programs,
// injection, the mount protocol; test/e2e's pathTests, which the host
// runs on the syscall-tracepoint path); the others add runtime probes
// whose ties to sockets differ by path (gRPC, HTTP/2 claims, TLS
// variants) and sampling. The server handlers' parents (TestGRPC- and
// TestHTTP2ServerHandlerParents) stay on the host: their probes are in
// user space, the same on every path, and under software emulation they
// took half of a 16-minute guest (2026-12-07).
var (
	guestCoreTests = []string{"TestGoNetHTTPServer", "TestParentChildOnSameThread", "TestBadInput",
		"TestInjectionKeepsRequestsValid", "TestInjectionLeavesTLSAlone", "TestInjectionLargeBodies",
		"TestMountProtocolInterop", "TestTraceparentAfterSplitHead", "TestInjectedRequestIsOneSegment",
		"TestGoAsyncParents", "TestNginxParents", "TestHTTP2Streams", "TestTLSGo"}
	guestTests = append(slices.Clone(guestCoreTests), "TestSamplingTraceIDRatio", "TestHTTP2ClientParents",
		"TestGRPCClientParents", "TestGRPCCalls", "TestTLSGoStackGrowth", "TestTLSGoPlainCall", "TestGRPCCallsTLS")
)

// guestTestsFor is what a guest runs on a kernel and attach path: every
// test once on the kprobe path, which only the guests can run, on the
// newest kernel; the core everywhere else: on 6.1 (whose verifier still
// loads every program of the path, gRPC's and HTTP/2's included, for
// each test) and on 6.12's tracepoint path, which the host's own
// end-to-end run takes with every test on its newer kernel. (6.1 with
// every test ran past the guest's timeout beside test/e2e's JVM suites.)
func guestTestsFor(release, path string) []string {
	if path == "kprobe" && !strings.HasPrefix(release, "6.1.") {
		return guestTests
	}
	return guestCoreTests
}

// guestNginx is Debian's nginx with the loader and libraries it links, and
// the accounts its workers switch to.
func guestNginx(t *testing.T) (map[string]string, map[string][]byte) {
	t.Helper()
	files, err := DynamicProgram("/usr/sbin/nginx")
	if err != nil {
		t.Fatal(err)
	}
	return files, map[string][]byte{
		"/etc/passwd": []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n"),
		"/etc/group":  []byte("root:x:0:\nnogroup:x:65534:\n"),
	}
}

// buildStatic compiles a package of this module as a static binary; with
// test set, its test binary. h2app is stripped, as the host's tests build
// it; h2app-grpc-1.81 is h2app against grpc-go 1.81 (its own go.mod).
func buildStatic(t *testing.T, pkg, name string, test bool) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), name)
	args := []string{"build", "-trimpath", "-buildvcs=false", "-o", out, pkg}
	switch name {
	case "h2app":
		args = []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", out, pkg}
	case "h2app-grpc-1.81":
		args = []string{"build", "-trimpath", "-buildvcs=false", "-modfile=test/e2e/testdata/h2app/grpc-1.81.mod",
			"-ldflags=-s -w", "-o", out, pkg}
	}
	if test {
		args = []string{"test", "-c", "-trimpath", "-buildvcs=false", "-o", out, pkg}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// The kprobe attach path, end to end, on Debian's stock kernels (which have
// kprobes, unlike the machine this runs on): the same span checks as on the
// host, with weft forced onto --probes=kprobe. On kernels that also have the
// sock tracepoints (6.3+), the tracepoint path (socket calls only) runs
// there too, on an older verifier than the host's. The syscall-tracepoint
// path runs on the host (test/e2e's TestSyscallTracepointPath).
func TestWeftEndToEndInGuests(t *testing.T) {
	kernels := testKernels(t)
	bins := map[string]string{
		"/opt/weft/weft":            buildStatic(t, "./cmd/weft", "weft", false),
		"/opt/weft/websrv":          buildStatic(t, "./test/e2e/testdata/websrv", "websrv", false),
		"/opt/weft/rawclient":       buildStatic(t, "./test/e2e/testdata/rawclient", "rawclient", false),
		"/opt/weft/h2app":           buildStatic(t, "./test/e2e/testdata/h2app", "h2app", false),
		"/opt/weft/h2app-grpc-1.81": buildStatic(t, "./test/e2e/testdata/h2app", "h2app-grpc-1.81", false),
		"/opt/weft/e2e.test":        buildStatic(t, "./test/e2e", "e2e.test", true),
		// TestGoAsyncParents's front, a module of its own (see its go.mod)
		"/opt/weft/goasync-go-default": buildGoAsync(t),
	}
	hostFiles, etc := guestNginx(t)
	for _, k := range kernels {
		paths := []string{"kprobe"}
		if !strings.HasPrefix(k.Release, "6.1.") {
			paths = append(paths, "tracepoint")
		}
		for _, path := range paths {
			t.Run(k.Release+"/"+path, func(t *testing.T) {
				tests := guestTestsFor(k.Release, path)
				res := boot(t, Config{
					Kernel:    k.Path,
					Binaries:  bins,
					HostFiles: hostFiles,
					Files:     etc,
					Command: []string{"/opt/weft/e2e.test", "-test.v", "-test.count=1",
						"-test.run", "^(" + strings.Join(tests, "|") + ")$"},
					Env: []string{
						"WEFT_E2E_BIN_DIR=/opt/weft",
						"WEFT_E2E_PROBES=" + path,
						"WEFT_REQUIRE_PRIVILEGED=1",
						"HOME=/root",
					},
					MemoryMB: 2048,
					// A hang guard, not a speed bound: beside
					// test/e2e's JVM suites 6.12's full list took
					// 6.7 minutes here (2026-12-07), and CI
					// machines have run the guests twice as slow.
					Timeout: 24 * time.Minute,
				})
				if res.ExitCode != 0 {
					t.Fatalf("e2e tests failed in the guest (exit %d):\n%s", res.ExitCode, res.CommandOutput)
				}
				for _, name := range tests {
					if !strings.Contains(res.CommandOutput, "--- PASS: "+name) {
						t.Errorf("%s did not pass in the guest:\n%s", name, res.CommandOutput)
					}
				}
				if !strings.Contains(res.CommandOutput, "path="+path) {
					t.Errorf("weft did not report attaching on the %s path:\n%s", path, res.CommandOutput)
				}
			})
		}
	}
}

// buildGoAsync compiles test/e2e/testdata/goasync, statically.
func buildGoAsync(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "goasync")
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", out, ".")
	cmd.Dir = filepath.Join("..", "e2e", "testdata", "goasync")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build goasync: %v\n%s", err, b)
	}
	return out
}
