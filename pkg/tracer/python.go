package tracer

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cilium/ebpf/link"

	"github.com/weftdev/weft/pkg/probesite"
)

// What weft's Python companion calls to announce each outgoing request's
// parent (bpf/include/announce.h), and the marks of a CPython
// executable: Py_BytesMain in it, or a libpython it links.
const (
	pyAnnounce = "access"
	// access(path, mode): the probe reads the path.
	pyAnnounceArgs = 1
	pyMain         = "Py_BytesMain"
	libpythonPfx   = "libpython"
	libcName       = "libc.so.6"
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
	m, ok, err := findMapping(pid, func(base string) bool { return strings.HasPrefix(base, prefix) })
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errors.New("no " + prefix + " mapped")
	}
	return m.root, nil
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
	at, err := probesite.EntryOffset(path, pyAnnounce, pyAnnounceArgs)
	if err != nil {
		return nil, err
	}
	l, err := ex.Uprobe(pyAnnounce, progs.LibcAnnounce, &link.UprobeOptions{PID: pid, Address: at})
	if err != nil {
		return nil, fmt.Errorf("uprobe %s in %s: %w", pyAnnounce, path, err)
	}
	return hookLinks{l}, nil
}
