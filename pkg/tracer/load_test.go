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
			coll, err := Load(Options{Path: p, CaptureBytes: capture, SelfPID: uint32(os.Getpid())})
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

func TestLoadRejectsBadCapture(t *testing.T) {
	if _, err := Load(Options{Path: kernel.PathTracepoint, CaptureBytes: MaxCapture + 1}); err == nil {
		t.Fatal("capture above the maximum was accepted")
	}
}
