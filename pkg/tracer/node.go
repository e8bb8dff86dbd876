package tracer

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/cilium/ebpf/link"

	"github.com/weftdev/weft/pkg/probesite"
)

// The function weft's Node.js companion calls to announce each outgoing
// request's parent (bpf/include/announce.h), and the marks of a Node.js
// executable: node::Start, exported by the official builds (libuv linked
// in), or libnode linked by distributions' builds (libuv shared).
const (
	nodeAnnounce = "uv_fs_access"
	// uv_fs_access(loop, req, path, mode, cb): the probe reads the path.
	nodeAnnounceArgs = 3
	nodeStart        = "_ZN4node5StartEiPPc"
	libnodeName      = "libnode.so"
	libuvName        = "libuv.so"
)

// IsNode reports whether process pid runs Node.js.
func IsNode(pid int) bool { return isNode("/proc/" + strconv.Itoa(pid) + "/exe") }

// isNode reports whether the executable is a Node.js runtime.
func isNode(path string) bool { return linksOrDefines(path, libnodeName, nodeStart) }

// definesFunc reports whether the ELF file at path defines fn.
func definesFunc(path, fn string) bool { return definedFuncs(path, fn)[fn] }

// definedFuncs says which of fns the ELF file at path defines (and
// exports: its dynamic symbols).
func definedFuncs(path string, fns ...string) map[string]bool {
	out := map[string]bool{}
	f, err := elf.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && slices.Contains(fns, s.Name) {
			out[s.Name] = true
		}
	}
	return out
}

// nodeAnnounceFile is the file of process pid that holds uv_fs_access: its
// executable, or the libuv it mapped.
func nodeAnnounceFile(pid int) (string, error) {
	proc := "/proc/" + strconv.Itoa(pid)
	if definesFunc(proc+"/exe", nodeAnnounce) {
		return proc + "/exe", nil
	}
	lib, err := mappedLib(pid, libuvName)
	if err == nil && definesFunc(lib, nodeAnnounce) {
		return lib, nil
	}
	return "", errors.New("no " + nodeAnnounce + " in the executable or a mapped libuv")
}

// attachNode puts the companion's announcement hook on process pid only.
func attachNode(progs *runtimePrograms, pid int) (io.Closer, error) {
	path, err := nodeAnnounceFile(pid)
	if err != nil {
		return nil, err
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	at, err := probesite.EntryOffset(path, nodeAnnounce, nodeAnnounceArgs)
	if err != nil {
		return nil, err
	}
	l, err := ex.Uprobe(nodeAnnounce, progs.NodeAnnounce, &link.UprobeOptions{PID: pid, Address: at})
	if err != nil {
		return nil, fmt.Errorf("uprobe %s in %s: %w", nodeAnnounce, path, err)
	}
	return hookLinks{l}, nil
}
