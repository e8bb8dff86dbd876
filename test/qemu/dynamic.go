package qemu

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
)

// DynamicProgram lists, for Config.HostFiles, a dynamically linked host
// program and everything ldd says it loads (its loader and libraries),
// each at its host path, symlinks resolved: the guest has no libc of its
// own.
func DynamicProgram(path string) (map[string]string, error) {
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return nil, fmt.Errorf("ldd %s: %w", path, err)
	}
	files := map[string]string{}
	add := func(p string) error {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		files[p] = real
		return nil
	}
	if err := add(path); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// "libz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x…)" or
		// "/lib64/ld-linux-x86-64.so.2 (0x…)"; the vDSO has no file.
		f := strings.Fields(sc.Text())
		lib := ""
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0]
		case len(f) >= 3 && f[1] == "=>" && f[2] == "not":
			return nil, fmt.Errorf("%s: %s not found", path, f[0])
		}
		if lib != "" {
			if err := add(lib); err != nil {
				return nil, err
			}
		}
	}
	return files, nil
}
