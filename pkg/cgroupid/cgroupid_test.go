package cgroupid

import "testing"

const (
	cid  = "4f2a9c1b7e3d5a6f8b0c2d4e6f8a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a"
	cid2 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	uid  = "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d"
	uidU = "1b2c3d4e_5f60_4a7b_8c9d_0e1f2a3b4c5d"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, path string
		want       Identity
	}{
		{"docker, systemd driver", "/system.slice/docker-" + cid + ".scope", Identity{ContainerID: cid}},
		{"docker, cgroupfs driver", "/docker/" + cid, Identity{ContainerID: cid}},
		{"podman", "/machine.slice/libpod-" + cid + ".scope/container", Identity{ContainerID: cid}},
		{"podman rootless", "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + cid + ".scope", Identity{ContainerID: cid}},
		{"podman conmon", "/machine.slice/libpod-conmon-" + cid + ".scope", Identity{}},
		{"containerd, systemd driver", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
			Identity{ContainerID: cid, PodUID: uid}},
		{"guaranteed pod, systemd driver", "/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
			Identity{ContainerID: cid, PodUID: uid}},
		{"besteffort pod, cgroupfs driver", "/kubepods/besteffort/pod" + uid + "/" + cid, Identity{ContainerID: cid, PodUID: uid}},
		{"guaranteed pod, cgroupfs driver", "/kubepods/pod" + uid + "/" + cid, Identity{ContainerID: cid, PodUID: uid}},
		{"cri-o", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-" + cid + ".scope",
			Identity{ContainerID: cid, PodUID: uid}},
		{"cri-o conmon", "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/crio-conmon-" + cid + ".scope", Identity{}},
		{"k3s / containerd without systemd", "/system.slice/containerd.service/kubepods-besteffort-pod" + uidU + ".slice:cri-containerd:" + cid,
			Identity{ContainerID: cid, PodUID: uid}},
		{"kind: a pod inside a node container", "/system.slice/docker-" + cid2 + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
			Identity{ContainerID: cid, PodUID: uid}},
		{"seen from a cgroup namespace", "/../../kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
			Identity{ContainerID: cid, PodUID: uid}},
		{"static pod", "/kubepods/burstable/pod6a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d/" + cid,
			Identity{ContainerID: cid, PodUID: "6a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d"}},
		{"pod sandbox cgroup, no container", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice", Identity{PodUID: uid}},
		{"upper-case id", "/docker/" + "4F2A9C1B7E3D5A6F8B0C2D4E6F8A0B1C2D3E4F5A6B7C8D9E0F1A2B3C4D5E6F7A", Identity{ContainerID: cid}},
		{"weft's e2e naming", "/weft-test-" + cid + ".scope", Identity{ContainerID: cid}},
		{"systemd service", "/system.slice/sshd.service", Identity{}},
		{"user session", "/user.slice/user-1000.slice/session-3.scope", Identity{}},
		{"root", "/", Identity{}},
		{"empty", "", Identity{}},
		{"short hex is no id", "/docker/" + cid[:63], Identity{}},
		{"longer hex is no id", "/docker/0" + cid, Identity{}},
		{"hex inside a word", "/x" + cid + ".scope", Identity{}},
		{"pod outside kubepods is ignored", "/pod" + uid + "/" + cid, Identity{ContainerID: cid}},
		{"pod below the container is not its pod", "/docker-" + cid + ".scope/kubepods/pod" + uid, Identity{ContainerID: cid}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Parse(c.path); got != c.want {
				t.Errorf("Parse(%q) = %+v, want %+v", c.path, got, c.want)
			}
		})
	}
}

func TestFromProcCgroup(t *testing.T) {
	for _, c := range []struct {
		name, content string
		want          Identity
	}{
		{"cgroup v2", "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope\n",
			Identity{ContainerID: cid, PodUID: uid}},
		{"cgroup v1", "12:pids:/kubepods/burstable/pod" + uid + "/" + cid + "\n11:memory:/kubepods/burstable/pod" + uid + "/" + cid + "\n1:name=systemd:/kubepods/burstable/pod" + uid + "/" + cid + "\n",
			Identity{ContainerID: cid, PodUID: uid}},
		{"hybrid, container in v1 only", "12:memory:/docker/" + cid + "\n1:name=systemd:/docker/" + cid + "\n0::/\n", Identity{ContainerID: cid}},
		{"hybrid, v2 wins", "12:memory:/docker/" + cid2 + "\n0::/system.slice/docker-" + cid + ".scope\n", Identity{ContainerID: cid}},
		{"host process", "0::/system.slice/sshd.service\n", Identity{}},
		{"pod cgroup only", "0::/kubepods/burstable/pod" + uid + "\n", Identity{PodUID: uid}},
		{"malformed lines", "garbage\n\n0::\n", Identity{}},
		{"empty", "", Identity{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FromProcCgroup([]byte(c.content)); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestFromName(t *testing.T) {
	for name, want := range map[string]string{
		"docker-" + cid + ".scope":         cid,
		"cri-containerd-" + cid + ".scope": cid,
		"crio-" + cid + ".scope":           cid,
		"libpod-" + cid + ".scope":         cid,
		cid:                                cid,
		"crio-conmon-" + cid + ".scope":    "",
		"docker-" + cid[:20] + ".scope":    "",
		"kubepods-besteffort.slice":        "",
		"system.slice":                     "",
	} {
		if got, _ := FromName(name); got != want {
			t.Errorf("FromName(%s) = %q, want %q", name, got, want)
		}
	}
}
