package jvmattach

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// RetriesEAGAIN reports whether process pid is a JVM whose sockets retry a
// read that fails with EAGAIN, as the NIO socket implementation does in
// blocking mode (JDK 13 and later, unless -Djdk.net.usePlainSocketImpl
// brings the old one back before JDK 18). weft's injection lets such a
// process's blocking sockets join its sockhash, whose receive path answers
// a blocking read that a signal interrupts with EAGAIN. Anything it cannot
// tell is false.
func RetriesEAGAIN(pid int) (bool, error) {
	lib, err := libjvmPath(pid)
	if err != nil || lib == "" {
		return false, err
	}
	release, err := findRelease(filepath.Dir(lib))
	if err != nil {
		return false, nil // no release file: an unknown layout, an unknown JDK
	}
	major, ok := releaseMajor(release)
	if !ok || major < 13 {
		return false, nil
	}
	if major < 18 {
		for _, name := range []string{"cmdline", "environ"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, name))
			if err != nil || bytes.Contains(b, []byte("jdk.net.usePlainSocketImpl")) {
				return false, nil
			}
		}
	}
	return true, nil
}

// libjvmPath is the path of the libjvm.so mapped into pid, or "".
func libjvmPath(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", ErrNoProcess
		}
		return "", fmt.Errorf("read maps of %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexByte(line, '/'); i >= 0 && strings.HasSuffix(line, "/libjvm.so") {
			// Read through the process's root, in case it runs in a container.
			return fmt.Sprintf("/proc/%d/root%s", pid, line[i:]), nil
		}
	}
	return "", sc.Err()
}

// findRelease reads the JDK's release file, a few levels above the
// directory of libjvm.so (lib/server/ since JDK 9, jre/lib/amd64/server/
// before).
func findRelease(dir string) ([]byte, error) {
	for range 4 {
		dir = filepath.Dir(dir)
		if b, err := os.ReadFile(filepath.Join(dir, "release")); err == nil {
			return b, nil
		}
	}
	return nil, fs.ErrNotExist
}

// releaseMajor is the feature release of a JDK's release file
// (JAVA_VERSION="17.0.15" is 17; the old "1.8.0_392" is 8).
func releaseMajor(release []byte) (int, bool) {
	for _, line := range strings.Split(string(release), "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "JAVA_VERSION=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"`)
		v = strings.TrimPrefix(v, "1.")
		end := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
		if end >= 0 {
			v = v[:end]
		}
		n, err := strconv.Atoi(v)
		return n, err == nil
	}
	return 0, false
}
