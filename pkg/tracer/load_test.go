package tracer

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"

	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/testenv"
)

// Every program of every path must pass the verifier on this kernel, even
// the kprobe ones that cannot attach here.
func TestLoadAllPaths(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, p := range kernel.Paths {
		for _, capture := range []int{256, MaxCapture} {
			coll, err := Load(Options{Path: p, CaptureBytes: capture, SelfPID: uint32(os.Getpid()), Propagation: true, RuntimeHooks: true, IoctlPackets: true, TLS: true})
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

// A feature left off loads none of its programs, and a program of
// another path is never loaded: with propagation, runtime hooks, ioctl
// packets, TLS and cgroup selection off, no sockops, sk_msg, uprobe, ioctl or
// cgroup-move program is in the kernel, and everything else the path
// declares is.
func TestLoadOnlyEnabled(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, p := range kernel.Paths {
		all, err := Load(Options{Path: p, CaptureBytes: 256, SelfPID: uint32(os.Getpid()), Propagation: true, RuntimeHooks: true, IoctlPackets: true, TLS: true,
			Cgroups: []Cgroup{{ID: 1, Level: 0}}})
		if err != nil {
			t.Fatal(err)
		}
		lean, err := Load(Options{Path: p, CaptureBytes: 256, SelfPID: uint32(os.Getpid())})
		if err != nil {
			t.Fatal(err)
		}
		dropped := 0
		for _, h := range hooks {
			if h.prog == "weft_sockops_any" || h.prog == "weft_sockops" || strings.HasPrefix(h.prog, "weft_ssl_") || strings.HasPrefix(h.prog, "weft_go_tls") ||
				h.prog == "weft_jvm_tls" || h.prog == "weft_jvm_tls_multi" {
				continue // one of the two, by the kernel (dropSockopsVariant, dropTLSVariant)
			}
			if h.via != "" {
				continue // with the programs that call it (below)
			}
			_, inAll := all.Programs[h.prog]
			_, inLean := lean.Programs[h.prog]
			if inAll != h.paths.has(p) {
				t.Errorf("%s: %s loaded=%v with every feature on", p, h.prog, inAll)
			}
			if want := h.paths.has(p) && h.feature == always; inLean != want {
				t.Errorf("%s: %s loaded=%v with every feature off", p, h.prog, inLean)
			}
			if inAll && !inLean {
				dropped++
			}
		}
		if dropped < 5 { // sk_msg, cgroup move and at least the Go uprobes
			t.Errorf("%s: only %d programs belong to the features left off", p, dropped)
		}
		// The emitting programs come with their callers: the path's
		// socket programs, and with TLS capture its uprobes (uprobe_multi
		// where the kernel has it).
		tls := []string{"weft_emit_probe"}
		if features.HaveBPFLinkUprobeMulti() == nil {
			tls = []string{"weft_emit_multi"}
		}
		socket := map[kernel.Path]string{kernel.PathKprobe: "weft_emit_probe", kernel.PathTracepoint: "weft_emit_sock",
			kernel.PathSyscalls: "weft_emit_exit"}[p]
		emitters := [2][]string{slices.Compact(slices.Sorted(slices.Values(append(tls, socket)))), {socket}}
		for i, coll := range []*ebpf.Collection{all, lean} {
			var got []string
			for _, h := range hooks {
				if _, ok := coll.Programs[h.prog]; ok && h.via != "" {
					got = append(got, h.prog)
				}
			}
			if want := emitters[i]; !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
				t.Errorf("%s: emitting programs %v loaded, want %v (every feature on: %v)", p, got, want, i == 0)
			}
		}
		all.Close()
		lean.Close()
	}
}

// The hook table declares exactly the programs of both objects: each
// object's programs are declared for its paths, and every declared
// program is in the object of each path it names.
func TestHooksDeclareEveryProgram(t *testing.T) {
	for _, p := range kernel.Paths {
		spec, err := Spec(p)
		if err != nil {
			t.Fatal(err)
		}
		for name := range spec.Programs {
			h, ok := hookIndex[name]
			if !ok {
				t.Errorf("%s: program %s is not in the hook table", p, name)
				continue
			}
			// The tracepoint object serves two paths: each of its programs
			// is declared for one of them at least.
			object := onKprobe
			if p != kernel.PathKprobe {
				object = onTracepoint | onSyscalls
			}
			if h.paths&object == 0 {
				t.Errorf("%s: %s is in the object but declared for none of its paths", p, name)
			}
		}
		for _, h := range hooks {
			if h.paths.has(p) && spec.Programs[h.prog] == nil {
				t.Errorf("%s: declared %s is not in the object", p, h.prog)
			}
		}
	}
	if len(hookIndex) != len(hooks) {
		t.Errorf("the hook table declares a program twice")
	}
}

func TestLoadRejectsBadCapture(t *testing.T) {
	if _, err := Load(Options{Path: kernel.PathTracepoint, CaptureBytes: MaxCapture + 1}); err == nil {
		t.Fatal("capture above the maximum was accepted")
	}
}

// The socket path's programs, whatever is enabled, hook no system call:
// a syscall tracepoint would slow every task on the host. Only OBI's
// ioctl packets, when configured, take one.
func TestSocketPathHooksNoSyscall(t *testing.T) {
	spec, err := Spec(kernel.PathTracepoint)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, h := range hooks {
		if !h.paths.has(kernel.PathTracepoint) || h.feature == ioctlPackets {
			continue
		}
		seen[h.prog] = true
		if sec := spec.Programs[h.prog].SectionName; strings.HasPrefix(sec, "tracepoint/syscalls/") {
			t.Errorf("%s attaches to %s on the socket path", h.prog, sec)
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
