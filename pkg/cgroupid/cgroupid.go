// Package cgroupid reads container and Kubernetes pod identities from
// cgroup paths, the way container runtimes and the kubelet name the cgroups
// they create. It is shared by the selector (--container) and procinfo
// (container.id on every resource).
package cgroupid

import (
	"bufio"
	"bytes"
	"strings"
)

// idLen is the length of a container id as docker, containerd, CRI-O and
// podman write it in cgroup names: 32 random bytes in hex.
const idLen = 64

// Identity is what a cgroup path says about the process in it.
type Identity struct {
	// ContainerID is the full container id, lower-case hex; empty when
	// the path names no container.
	ContainerID string
	// PodUID is the Kubernetes pod UID in its API form (dashes), or a
	// static pod's 32-hex config hash; empty outside Kubernetes.
	PodUID string
}

// Parse reads the identity from one cgroup path, e.g.
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice/cri-containerd-<id>.scope.
//
// The deepest directory named after a container wins: under nested
// runtimes (kind, a node in a container) the outer one is the node's. A
// container monitor (crio-conmon-<id>.scope, libpod-conmon-<id>.scope) is
// not a container, and its process has no identity at all.
func Parse(path string) Identity {
	segs := strings.Split(path, "/")
	var id Identity
	cont := -1
	for i := len(segs) - 1; i >= 0; i-- {
		c, conmon := FromName(segs[i])
		if conmon {
			return Identity{}
		}
		if c != "" {
			id.ContainerID, cont = c, i
			break
		}
	}
	kube := false
	for i, s := range segs {
		if strings.Contains(s, "kubepods") {
			kube = true
		}
		// The pod's directory is above its containers' (or, in the
		// slice:runtime:id form, the same segment).
		if kube && (cont < 0 || i <= cont) {
			if uid := podUID(s); uid != "" {
				id.PodUID = uid
			}
		}
	}
	return id
}

// FromName returns the container id that a cgroup directory's name holds:
// <id>, <prefix>-<id>[.scope] (docker-, cri-containerd-, crio-, libpod-,
// or any other runtime's prefix) or <slice>:<runtime>:<id> (containerd's
// systemd driver outside systemd's tree). conmon reports a container
// monitor's directory, which names a container it is not.
func FromName(name string) (id string, conmon bool) {
	name = strings.TrimSuffix(name, ".scope")
	if len(name) < idLen {
		return "", false
	}
	tail := name[len(name)-idLen:]
	if !isHex(tail) {
		return "", false
	}
	prefix := name[:len(name)-idLen]
	if prefix != "" && !strings.HasSuffix(prefix, "-") && !strings.HasSuffix(prefix, ":") {
		return "", false // a longer hex string, or part of a word
	}
	if strings.Contains(prefix, "conmon") {
		return "", true
	}
	return strings.ToLower(tail), false
}

// FromProcCgroup reads the identity from the contents of /proc/PID/cgroup:
// the cgroup v2 line (0::/path) when it names a container, else the first
// cgroup v1 line that does (hybrid hosts may keep containers in v1 only),
// else whatever pod any line names.
func FromProcCgroup(b []byte) Identity {
	var v2, pod Identity
	var v1 []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controllers:path; the path may contain colons.
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = Parse(parts[2])
		} else {
			v1 = append(v1, parts[2])
		}
	}
	if v2.ContainerID != "" {
		return v2
	}
	pod = v2
	for _, p := range v1 {
		id := Parse(p)
		if id.ContainerID != "" {
			return id
		}
		if pod.PodUID == "" {
			pod.PodUID = id.PodUID
		}
	}
	return pod
}

// podUID finds pod<uid> in a kubelet cgroup name: pod<uid> (cgroupfs
// driver, dashes) or <qos>-pod<uid_with_underscores>.slice (systemd
// driver), possibly followed by :runtime:id.
func podUID(seg string) string {
	seg, _, _ = strings.Cut(seg, ":")
	seg = strings.TrimSuffix(seg, ".slice")
	i := strings.LastIndex(seg, "pod")
	if i < 0 || (i > 0 && seg[i-1] != '-') {
		return ""
	}
	uid := strings.ReplaceAll(seg[i+3:], "_", "-")
	switch {
	case len(uid) == 36 && isUUID(uid):
		return strings.ToLower(uid)
	case len(uid) == 32 && isHex(uid):
		// A static pod: its UID is the hash of its manifest.
		return strings.ToLower(uid)
	}
	return ""
}

func isUUID(s string) bool {
	for i := 0; i < len(s); i++ {
		switch i {
		case 8, 13, 18, 23:
			if s[i] != '-' {
				return false
			}
		default:
			if !isHexByte(s[i]) {
				return false
			}
		}
	}
	return true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isHexByte(s[i]) {
			return false
		}
	}
	return true
}

func isHexByte(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
