package tracer

import (
	"os"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/testenv"
)

// Every program of every path must pass the verifier on this kernel, even
// the kprobe ones that cannot attach here.
func TestLoadAllPaths(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, p := range kernel.Paths {
		for _, capture := range []int{256, MaxCapture} {
			coll, err := Load(Options{Path: p, CaptureBytes: capture, SelfPID: uint32(os.Getpid()), Propagation: true, RuntimeHooks: true, IoctlPackets: true})
			if err != nil {
				t.Fatalf("%s capture=%d: %v", p, capture, err)
			}
			if len(coll.Programs) == 0 {
				t.Fatalf("%s: no programs loaded", p)
			}
			coll.Close()
		}
	}
}

// A feature left off loads none of its programs: with propagation,
// runtime hooks and ioctl packets off, no sockops, sk_msg, uprobe or ioctl
// program is in the kernel, and everything else is.
func TestLoadOnlyEnabled(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, p := range kernel.Paths {
		spec, err := Spec(p)
		if err != nil {
			t.Fatal(err)
		}
		all, err := Load(Options{Path: p, CaptureBytes: 256, SelfPID: uint32(os.Getpid()), Propagation: true, RuntimeHooks: true, IoctlPackets: true})
		if err != nil {
			t.Fatal(err)
		}
		lean, err := Load(Options{Path: p, CaptureBytes: 256, SelfPID: uint32(os.Getpid())})
		if err != nil {
			t.Fatal(err)
		}
		dropped := 0
		for name := range all.Programs {
			sec := spec.Programs[name].SectionName
			off := propagationPrograms[name] || runtimeHook(sec) || ioctlPrograms[name]
			if _, loaded := lean.Programs[name]; loaded == off {
				t.Errorf("%s: %s (%s) loaded=%v with propagation and runtime hooks off", p, name, sec, loaded)
			}
			if off {
				dropped++
			}
		}
		if dropped < 5 { // the sockops, sk_msg and at least the Go uprobes
			t.Errorf("%s: only %d programs belong to the features left off", p, dropped)
		}
		for name := range all.Programs {
			if !onPath(p, name, spec.Programs[name].SectionName) {
				t.Errorf("%s: %s of another path was loaded", p, name)
			}
		}
		all.Close()
		lean.Close()
	}
}

func TestLoadRejectsBadCapture(t *testing.T) {
	if _, err := Load(Options{Path: kernel.PathTracepoint, CaptureBytes: MaxCapture + 1}); err == nil {
		t.Fatal("capture above the maximum was accepted")
	}
}

// The socket path's programs, whatever is enabled, hook no system call:
// a syscall tracepoint would slow every task on the host.
func TestSocketPathHooksNoSyscall(t *testing.T) {
	spec, err := Spec(kernel.PathTracepoint)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for name, p := range spec.Programs {
		if !onPath(kernel.PathTracepoint, name, p.SectionName) || ioctlPrograms[name] {
			continue
		}
		seen[name] = true
		if strings.HasPrefix(p.SectionName, "tracepoint/syscalls/") {
			t.Errorf("%s attaches to %s on the socket path", name, p.SectionName)
		}
	}
	for _, want := range []string{"weft_sock_sent", "weft_sock_received", "weft_inject_sock"} {
		if !seen[want] {
			t.Errorf("the socket path lacks %s", want)
		}
	}
	for _, gone := range []string{"weft_enter_write", "weft_exit_read", "weft_sock_send", "weft_inject"} {
		if seen[gone] {
			t.Errorf("the socket path keeps %s", gone)
		}
	}
}
