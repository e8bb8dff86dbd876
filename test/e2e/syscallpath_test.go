package e2e

import "testing"

// pathTests are the tests whose kernel side differs between attach paths:
// the socket programs, injection, the mount protocol, and the runtime
// probes' ties to sockets. The QEMU guests run them on the kprobe path
// (test/qemu, which keeps the same list).
var pathTests = []struct {
	name string
	run  func(*testing.T)
}{
	{"TestGoNetHTTPServer", TestGoNetHTTPServer},
	{"TestParentChildOnSameThread", TestParentChildOnSameThread},
	{"TestBadInput", TestBadInput},
	{"TestInjectionKeepsRequestsValid", TestInjectionKeepsRequestsValid},
	{"TestInjectionLeavesTLSAlone", TestInjectionLeavesTLSAlone},
	{"TestInjectionLargeBodies", TestInjectionLargeBodies},
	{"TestMountProtocolInterop", TestMountProtocolInterop},
	{"TestTraceparentAfterSplitHead", TestTraceparentAfterSplitHead},
	{"TestInjectedRequestIsOneSegment", TestInjectedRequestIsOneSegment},
	{"TestGoAsyncParents", TestGoAsyncParents},
	{"TestNginxParents", TestNginxParents},
	{"TestHTTP2Streams", TestHTTP2Streams},
	{"TestTLSGo", TestTLSGo},
}

// The syscall-tracepoint path, which weft takes on kernels without kprobes
// and without sock_*_length (before 6.3), differs from the tracepoint path
// only in how the socket programs find a call's buffer. This host has the
// syscall tracepoints too, so the path's tests run here, forced by
// --probes=syscalls (startWeft checks the path weft reports), at a tenth of
// what a guest under software emulation takes.
func TestSyscallTracepointPath(t *testing.T) {
	setup(t)
	t.Setenv("WEFT_E2E_PROBES", "syscalls")
	for _, tc := range pathTests {
		t.Run(tc.name, tc.run)
	}
}
