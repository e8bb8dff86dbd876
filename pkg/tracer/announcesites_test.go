package tracer

import (
	"os"
	"os/exec"
	"testing"

	"github.com/weftdev/weft/pkg/probesite"
)

// The companions' announcement probes on this machine's Node.js
// (uv_fs_access begins with a NULL check) and glibc (access begins by
// loading the system call's number) sit on an instruction the kernel
// emulates, not on their first, which it would single-step.
func TestAnnouncementProbesAreEmulated(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	for _, c := range []struct {
		path, fn string
		nargs    int
	}{
		{node, nodeAnnounce, nodeAnnounceArgs},
		{"/lib/x86_64-linux-gnu/" + libcName, pyAnnounce, pyAnnounceArgs},
	} {
		at, err := probesite.EntryOffset(c.path, c.fn, c.nargs)
		if err != nil {
			t.Fatalf("EntryOffset(%s, %s): %v", c.path, c.fn, err)
		}
		file, err := os.ReadFile(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if !probesite.Emulated(file[at:]) {
			t.Errorf("%s in %s: probe at %#x on % x, which the kernel single-steps", c.fn, c.path, at, file[at:at+4])
		}
	}
}
