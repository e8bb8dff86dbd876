// Package testenv gates tests that need root and a BPF-capable kernel. In
// CI (WEFT_REQUIRE_PRIVILEGED=1) such a test fails instead of skipping, so
// a missing privilege can never pass silently.
package testenv

import (
	"os"
	"testing"
)

// Required reports whether privileged tests must run.
func Required() bool { return os.Getenv("WEFT_REQUIRE_PRIVILEGED") == "1" }

// RequirePrivileged skips the test when not root, unless privileged tests
// are required, in which case it fails.
func RequirePrivileged(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if Required() {
		t.Fatal("WEFT_REQUIRE_PRIVILEGED=1 but not running as root")
	}
	t.Skip("needs root (set WEFT_REQUIRE_PRIVILEGED=1 to make this a failure)")
}
