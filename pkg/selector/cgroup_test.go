package selector

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestContainerDirectoryNames(t *testing.T) {
	id := "4f2a9c1b7e3d5a6f8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a"
	for name, want := range map[string]bool{
		"docker-" + id + ".scope":         true,
		"cri-containerd-" + id + ".scope": true,
		"crio-" + id + ".scope":           true,
		"libpod-" + id + ".scope":         true,
		id:                                true,
		"docker-" + id[:20] + ".scope":    false, // shorter than the id asked for
		"crio-conmon-" + id + ".scope":    false, // the container's monitor
		"kubepods-besteffort.slice":       false,
		"system.slice":                    false,
	} {
		if got := containerDirHolds(name, id[:32]); got != want {
			t.Errorf("%s holds %s: %v, want %v", name, id[:32], got, want)
		}
	}
}

func TestResolveContainerFromProcCgroups(t *testing.T) {
	id := "4f2a9c1b7e3d5a6f8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a"
	proc := t.TempDir()
	for pid, line := range map[int]string{
		7: "0::/system.slice/sshd.service\n",
		8: "12:memory:/docker/x\n0::/system.slice/docker-" + id + ".scope/app\n",
	} {
		dir := filepath.Join(proc, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := resolveContainer(proc, "/sys/fs/cgroup", id[:12])
	if err != nil {
		t.Fatal(err)
	}
	if want := "/sys/fs/cgroup/system.slice/docker-" + id + ".scope"; got != want {
		t.Errorf("container dir = %s, want %s", got, want)
	}
}
