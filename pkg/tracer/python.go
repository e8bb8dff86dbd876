package tracer

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cilium/ebpf/link"
)

// What weft's Python companion calls to announce each outgoing request's
// parent (bpf/include/announce.h), and the marks of a CPython
// executable: Py_BytesMain in it, or a libpython it links.
const (
	pyAnnounce   = "access"
	pyMain       = "Py_BytesMain"
	libpythonPfx = "libpython"
	libcName     = "libc.so.6"
)

// isPython reports whether the executable is CPython.
func isPython(path string) bool { return linksOrDefines(path, libpythonPfx, pyMain) }

// linksOrDefines reports whether the ELF file at path links a library
// whose name starts with lib, or defines symbol sym: how a runtime is
// recognised whether its distribution builds it shared or static.
func linksOrDefines(path, lib, sym string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if libs, err := f.ImportedLibraries(); err == nil {
		for _, l := range libs {
			if strings.HasPrefix(l, lib) {
				return true
			}
		}
	}
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if s.Name == sym && s.Value != 0 {
			return true
		}
	}
	return false
}

// mappedLib is the path, seen from here, of the library process pid mapped
// whose file name starts with prefix.
func mappedLib(pid int, prefix string) (string, error) {
	proc := "/proc/" + strconv.Itoa(pid)
	maps, err := os.Open(proc + "/maps")
	if err != nil {
		return "", err
	}
	defer maps.Close()
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 6 && strings.HasPrefix(filepath.Base(f[5]), prefix) {
			return proc + "/root" + f[5], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read %s/maps: %w", proc, err)
	}
	return "", errors.New("no " + prefix + " mapped")
}

// attachPython puts the companion's announcement hook on process pid's
// libc, for that process only.
func attachPython(progs *runtimePrograms, pid int) (io.Closer, error) {
	path, err := mappedLib(pid, libcName)
	if err != nil {
		return nil, err
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	l, err := ex.Uprobe(pyAnnounce, progs.LibcAnnounce, &link.UprobeOptions{PID: pid})
	if err != nil {
		return nil, fmt.Errorf("uprobe %s in %s: %w", pyAnnounce, path, err)
	}
	return hookLinks{l}, nil
}
