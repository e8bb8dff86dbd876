package selector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/weftdev/weft/pkg/cgroupid"
)

// maxCgroupLevel bounds the depth of a selected cgroup: the kernel side
// keeps one bit per level.
const maxCgroupLevel = 31

// Cgroup is a selected cgroup v2 directory.
type Cgroup struct {
	Path     string // absolute, under the cgroup2 mount
	ID       uint64 // the kernel's cgroup id
	Level    int    // depth under the root (the root is 0)
	Selector string // what the user named: cgroup=PATH or container=ID
}

// resolveCgroup checks that path is a cgroup v2 directory under root (the
// cgroup2 mount) and returns it by id and level.
func resolveCgroup(root, path, selector string) (Cgroup, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Cgroup{}, fmt.Errorf("cgroup %s: %w", path, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(abs, &fs); err != nil {
		return Cgroup{}, fmt.Errorf("cgroup %s: %w", path, err)
	}
	if fs.Type != unix.CGROUP2_SUPER_MAGIC {
		return Cgroup{}, fmt.Errorf("cgroup %s: not a cgroup v2 directory (the cgroup2 mount is %s)", path, root)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return Cgroup{}, fmt.Errorf("cgroup %s: not under the cgroup2 mount %s", path, root)
	}
	level := 0
	if rel != "." {
		level = len(strings.Split(rel, "/"))
	}
	if level > maxCgroupLevel {
		return Cgroup{}, fmt.Errorf("cgroup %s: %d levels deep, at most %d supported", path, level, maxCgroupLevel)
	}
	id, err := cgroupID(abs)
	if err != nil {
		return Cgroup{}, fmt.Errorf("cgroup %s: %w", path, err)
	}
	return Cgroup{Path: abs, ID: id, Level: level, Selector: selector}, nil
}

// cgroupID is the kernel's id of a cgroup v2 directory: the handle
// name_to_handle_at gives for it (what bpf_get_current_cgroup_id returns).
func cgroupID(dir string) (uint64, error) {
	h, _, err := unix.NameToHandleAt(unix.AT_FDCWD, dir, 0)
	if err != nil {
		return 0, fmt.Errorf("cgroup id: %w", err)
	}
	b := h.Bytes()
	if len(b) < 8 {
		return 0, fmt.Errorf("cgroup id: a %d-byte handle", len(b))
	}
	return binary.NativeEndian.Uint64(b[:8]), nil
}

// cgroupOf returns the cgroup v2 directory of process pid (its "0::"
// line in /proc/PID/cgroup), under root.
func cgroupOf(proc, root string, pid int) (string, error) {
	f, err := os.Open(filepath.Join(proc, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return filepath.Join(root, rest), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no cgroup v2 line")
}

// resolveContainer finds the cgroup of container id (a full id or a
// prefix of at least 12 characters, as docker ps shows it): the directory
// whose name holds the id, the way container runtimes name them
// (docker-ID.scope, cri-containerd-ID.scope, crio-ID.scope,
// libpod-ID.scope, or ID), looked for among the cgroups of the running
// processes, then in the whole cgroup tree (where weft runs in a cgroup
// namespace of its own, /proc/PID/cgroup names paths it cannot place).
func resolveContainer(proc, root, id string) (string, error) {
	if len(id) < 12 || strings.ContainsAny(id, "/.") {
		return "", fmt.Errorf("container %q: want its id (at least 12 characters)", id)
	}
	entries, err := os.ReadDir(proc)
	if err != nil {
		return "", fmt.Errorf("list processes: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cg, err := cgroupOf(proc, root, pid)
		if err != nil || !under(cg, root) {
			continue
		}
		for dir := cg; len(dir) > len(root); dir = filepath.Dir(dir) {
			if containerDirHolds(filepath.Base(dir), id) {
				return dir, nil
			}
		}
	}
	if dir := findContainerDir(root, id); dir != "" {
		return dir, nil
	}
	return "", fmt.Errorf("container %s: no running process is in a cgroup named after it", id)
}

// findContainerDir walks the cgroup tree for a directory named after id.
func findContainerDir(root, id string) string {
	found := ""
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != root && containerDirHolds(d.Name(), id) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// containerDirHolds reports whether a cgroup directory's name is that of
// the container whose id starts with id (a container monitor's, such as
// crio-conmon-ID.scope, is not).
func containerDirHolds(name, id string) bool {
	full, _ := cgroupid.FromName(name)
	return full != "" && strings.HasPrefix(full, strings.ToLower(id))
}

// under reports whether directory dir is cg or below it.
func under(dir, cg string) bool {
	return dir == cg || strings.HasPrefix(dir, cg+"/")
}

// cgroupMembers lists the processes in cg and every cgroup below it.
func cgroupMembers(cg string) ([]int, error) {
	var out []int
	err := filepath.WalkDir(cg, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if p == cg {
				return err
			}
			return nil // a child cgroup removed while walking
		}
		if !d.IsDir() {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return nil
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				out = append(out, pid)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list processes of cgroup %s: %w", cg, err)
	}
	return out, nil
}
