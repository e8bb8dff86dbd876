package tracer

import (
	"os"
	"testing"

	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/testenv"
)

// Every program of both paths must pass the verifier on this kernel, even
// the kprobe ones that cannot attach here.
func TestLoadBothPaths(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, p := range []kernel.Path{kernel.PathTracepoint, kernel.PathKprobe} {
		for _, capture := range []int{256, MaxCapture} {
			coll, err := Load(Options{Path: p, CaptureBytes: capture, SelfPID: uint32(os.Getpid()), Propagation: true, RuntimeHooks: true})
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

// A feature left off loads none of its programs: with propagation and
// runtime hooks off, no sockops, sk_msg or uprobe program is in the
// kernel, and everything else is.
func TestLoadOnlyEnabled(t *testing.T) {
	testenv.RequirePrivileged(t)
	for _, p := range []kernel.Path{kernel.PathTracepoint, kernel.PathKprobe} {
		spec, err := Spec(p)
		if err != nil {
			t.Fatal(err)
		}
		all, err := Load(Options{Path: p, CaptureBytes: 256, SelfPID: uint32(os.Getpid()), Propagation: true, RuntimeHooks: true})
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
			off := propagationPrograms[name] || runtimeHook(sec)
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
		all.Close()
		lean.Close()
	}
}

func TestLoadRejectsBadCapture(t *testing.T) {
	if _, err := Load(Options{Path: kernel.PathTracepoint, CaptureBytes: MaxCapture + 1}); err == nil {
		t.Fatal("capture above the maximum was accepted")
	}
}
