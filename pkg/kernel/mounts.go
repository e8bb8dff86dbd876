// Package kernel discovers what the running kernel offers weft: attach
// points, BTF, lockdown, and the pseudo file systems it needs mounted.
package kernel

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is one line of /proc/mounts.
type Mount struct {
	Source, Target, FSType string
}

// Mounts parses a /proc/mounts style listing.
func Mounts(r io.Reader) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		out = append(out, Mount{Source: f[0], Target: unescapeMount(f[1]), FSType: f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	return out, nil
}

// unescapeMount undoes the octal escapes /proc/mounts uses for spaces etc.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if v, ok := octal3(s[i+1:]); ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func octal3(s string) (byte, bool) {
	if len(s) < 3 {
		return 0, false
	}
	var v int
	for _, c := range s[:3] {
		if c < '0' || c > '7' {
			return 0, false
		}
		v = v*8 + int(c-'0')
	}
	return byte(v), v < 256
}

// FindMount returns the target of the first mount of the given type.
func FindMount(fstype string) (string, error) {
	f, err := os.Open("/proc/mounts")
	if err != nil {
		return "", fmt.Errorf("open /proc/mounts: %w", err)
	}
	defer f.Close()
	ms, err := Mounts(f)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if m.FSType == fstype {
			return m.Target, nil
		}
	}
	return "", fmt.Errorf("no %s mount: %w", fstype, os.ErrNotExist)
}

// EnsureTracefs returns where tracefs is mounted, mounting it at
// /sys/kernel/tracing when it is not: tracepoint attachment reads event
// ids from it.
func EnsureTracefs() (string, error) { return ensureMount("tracefs", "/sys/kernel/tracing") }

// EnsureSecurityfs returns where securityfs is mounted, mounting it when
// it is not: the lockdown mode is read from it.
func EnsureSecurityfs() (string, error) { return ensureMount("securityfs", "/sys/kernel/security") }

// EnsureBpffs returns where a bpf filesystem is mounted, mounting one at
// /sys/fs/bpf when none is: maps are pinned on it for other programs.
func EnsureBpffs() (string, error) { return ensureMount("bpf", "/sys/fs/bpf") }

func ensureMount(fstype, target string) (string, error) {
	if p, err := FindMount(fstype); err == nil {
		return p, nil
	}
	if err := unix.Mount(fstype, target, fstype, 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
		return "", fmt.Errorf("mount %s at %s: %w", fstype, target, err)
	}
	return target, nil
}
