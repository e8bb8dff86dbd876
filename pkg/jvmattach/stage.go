package jvmattach

import (
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// placeJar returns the path under which the JVM can open the agent jar, and
// a cleanup that removes any copy it made. The JVM opens the path itself,
// as its own user and in its own mount namespace, so the jar is used where
// it is only when the JVM sees the same files and may read it; otherwise it
// is copied into the JVM's /tmp as the JVM's user, as.
func placeJar(jarPath, agentArgs string, p process, as identity, jvmTmp *os.Root) (string, func(), error) {
	abs, err := filepath.Abs(jarPath)
	if err != nil {
		return "", nil, fmt.Errorf("agent jar: %w", err)
	}
	src, err := os.Open(abs)
	if err != nil {
		return "", nil, fmt.Errorf("agent jar: %w", err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return "", nil, fmt.Errorf("agent jar: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", nil, fmt.Errorf("agent jar %s is not a regular file", abs)
	}

	same, err := sameFilesystemView(p.pid)
	if err != nil {
		return "", nil, err
	}
	// The instrument library splits its option at the first '=', so a path
	// holding one would be cut; a long path could exceed the protocol limit.
	usable := same && !strings.Contains(abs, "=") && len(abs)+1+len(agentArgs) <= maxArgLen
	if usable && readableBy(abs, p) {
		return abs, func() {}, nil
	}

	name := "weft-agent-" + rand.Text() + ".jar"
	// Written as the JVM's user, so the copy is the JVM's to read (and a
	// user namespace's filesystem accepts it); src was opened as weft.
	err = asIdentity(as, func() error {
		// O_EXCL: never write through a file or link someone planted there.
		dst, err := jvmTmp.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(dst, src)
		if err == nil {
			err = dst.Chmod(0o644)
		}
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			jvmTmp.Remove(name)
		}
		return err
	})
	if err != nil {
		return "", nil, fmt.Errorf("stage agent jar in the JVM's /tmp: %w", err)
	}
	cleanup := func() {
		asIdentity(as, func() error { return jvmTmp.Remove(name) })
	}
	return "/tmp/" + name, cleanup, nil
}

// sameFilesystemView reports whether pid resolves paths as weft does: same
// mount namespace and same root directory. /proc/<pid>/root alone would
// miss e.g. systemd's PrivateTmp, which only changes the mount namespace.
func sameFilesystemView(pid int) (bool, error) {
	for _, name := range []string{"ns/mnt", "root"} {
		mine, err := os.Stat("/proc/self/" + name)
		if err != nil {
			return false, fmt.Errorf("compare filesystems: %w", err)
		}
		theirs, err := os.Stat(fmt.Sprintf("/proc/%d/%s", pid, name))
		if err != nil {
			return false, fmt.Errorf("compare filesystems: %w", err)
		}
		if !os.SameFile(mine, theirs) {
			return false, nil
		}
	}
	return true, nil
}

// readableBy tells from the permission bits whether p can open path for
// reading: search permission on every directory above it, read permission
// on the file. ACLs are not consulted; in doubt the jar is copied anyway.
func readableBy(path string, p process) bool {
	if p.uid == 0 {
		return true
	}
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	if !permits(resolved, p, 4) {
		return false
	}
	for dir := filepath.Dir(resolved); ; dir = filepath.Dir(dir) {
		if !permits(dir, p, 1) {
			return false
		}
		if dir == "/" {
			return true
		}
	}
}

// permits checks one of r (4), w (2), x (1) on path for p.
func permits(path string, p process, bit os.FileMode) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	mode := fi.Mode().Perm()
	switch {
	case int(st.Uid) == p.uid:
		return mode&(bit<<6) != 0
	case int(st.Gid) == p.gid || slices.Contains(p.groups, int(st.Gid)):
		return mode&(bit<<3) != 0
	default:
		return mode&bit != 0
	}
}
