package procinfo

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weftdev/weft/pkg/cgroupid"
)

// maxProcFileSize bounds how much of cmdline or environ is read. Both can be
// large (JVM class paths run to hundreds of KiB) but never beyond ARG_MAX-ish
// sizes; the bound keeps a hostile process from making us read without end.
const maxProcFileSize = 1 << 20

// procStat is the part of /proc/<pid>/stat the resolver needs.
type procStat struct {
	comm      string
	ppid      int
	startTime uint64 // field 22, clock ticks since boot; changes when a pid is reused
}

// procFS reads one process's files below a configurable proc root, so that
// tests can run against a fake tree.
type procFS struct {
	root string
}

func (fs procFS) path(pid uint32, name string) string {
	return filepath.Join(fs.root, strconv.FormatUint(uint64(pid), 10), name)
}

func (fs procFS) stat(pid uint32) (procStat, error) {
	b, err := readLimited(fs.path(pid, "stat"), 4096)
	if err != nil {
		return procStat{}, fmt.Errorf("read stat of pid %d: %w", pid, err)
	}
	st, err := parseStat(b)
	if err != nil {
		return procStat{}, fmt.Errorf("parse stat of pid %d: %w", pid, err)
	}
	return st, nil
}

// parseStat parses /proc/<pid>/stat. comm (field 2) is in parentheses and may
// itself contain spaces and parentheses, so fields are counted from the last
// closing parenthesis.
func parseStat(b []byte) (procStat, error) {
	s := string(b)
	open := strings.IndexByte(s, '(')
	closing := strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procStat{}, errors.New("no comm field")
	}
	fields := strings.Fields(s[closing+1:])
	// fields[0] is field 3 (state), so field N is fields[N-3].
	if len(fields) < 20 {
		return procStat{}, fmt.Errorf("only %d fields after comm", len(fields))
	}
	ppid, err := strconv.Atoi(fields[4-3])
	if err != nil {
		return procStat{}, fmt.Errorf("ppid: %w", err)
	}
	start, err := strconv.ParseUint(fields[22-3], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("starttime: %w", err)
	}
	return procStat{comm: s[open+1 : closing], ppid: ppid, startTime: start}, nil
}

// exe returns the target of /proc/<pid>/exe, or "" when it cannot be read
// (kernel threads, zombies, missing permission).
func (fs procFS) exe(pid uint32) string {
	target, err := os.Readlink(fs.path(pid, "exe"))
	if err != nil {
		return ""
	}
	// The kernel appends this when the binary was replaced or removed
	// after the process started, typical during package upgrades.
	return strings.TrimSuffix(target, " (deleted)")
}

func (fs procFS) comm(pid uint32) string {
	b, err := readLimited(fs.path(pid, "comm"), 256)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func (fs procFS) cmdline(pid uint32) []string {
	b, err := readLimited(fs.path(pid, "cmdline"), maxProcFileSize)
	if err != nil {
		return nil
	}
	return splitNUL(b)
}

// environ returns the values of the named variables from the environment the
// process was started with. Reading it needs ptrace-level access, which the
// agent has; on failure the process simply looks unconfigured.
func (fs procFS) environ(pid uint32, names ...string) map[string]string {
	b, err := readLimited(fs.path(pid, "environ"), maxProcFileSize)
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(names))
	for _, kv := range splitNUL(b) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		for _, n := range names {
			if k == n {
				out[k] = v
			}
		}
	}
	return out
}

// cgroup returns the container and pod that /proc/<pid>/cgroup names, if
// any.
func (fs procFS) cgroup(pid uint32) cgroupid.Identity {
	b, err := readLimited(fs.path(pid, "cgroup"), 64<<10)
	if err != nil {
		return cgroupid.Identity{}
	}
	return cgroupid.FromProcCgroup(b)
}

// uid returns the effective uid from /proc/<pid>/status, the user ps shows.
func (fs procFS) uid(pid uint32) (string, bool) {
	b, err := readLimited(fs.path(pid, "status"), 64<<10)
	if err != nil {
		return "", false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "Uid:")
		if !ok {
			continue
		}
		ids := strings.Fields(rest)
		if len(ids) < 2 {
			return "", false
		}
		return ids[1], true
	}
	return "", false
}

func splitNUL(b []byte) []string {
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil
	}
	parts := bytes.Split(b, []byte{0})
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = string(p)
	}
	return out
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
