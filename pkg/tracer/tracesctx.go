package tracer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/weftdev/weft/pkg/kernel"
)

// tracesCtxMap is the OpenTelemetry profiler interop map: an LRU hash
// from pid_tgid (u64) to the thread's active span, 16-byte trace id then
// 8-byte span id (OTEP 4855, as OBI and the OpenTelemetry eBPF profiler
// define it). The BPF side keeps it up to date (bpf/include/tracectx.h).
const tracesCtxMap = "traces_ctx_v1"

// TracesCtxValue is the value layout of traces_ctx_v1.
type TracesCtxValue struct {
	TraceID [16]byte
	SpanID  [8]byte
}

// openTracesCtxPin prepares the pin path and returns the map already
// pinned there, if any: another component (OBI, the OpenTelemetry
// profiler, an earlier weft) created it, and both sides must use the same
// map. nil when nothing is pinned there (or no path is given).
func openTracesCtxPin(path string) (*ebpf.Map, error) {
	if path == "" {
		return nil, nil
	}
	dir := filepath.Dir(path)
	if err := ensureBpffsDir(dir); err != nil {
		return nil, fmt.Errorf("pin %s: %w", tracesCtxMap, err)
	}
	m, err := ebpf.LoadPinnedMap(path, nil)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open pinned %s at %s: %w", tracesCtxMap, path, err)
	}
	return m, nil
}

// ensureBpffsDir creates dir on a bpf filesystem, mounting bpffs at its
// usual place when dir is not on one (the kernel only pins there).
func ensureBpffsDir(dir string) error {
	if !onBpffs(dir) {
		mnt, err := kernel.EnsureBpffs()
		if err != nil {
			return err
		}
		if !onBpffs(dir) {
			return fmt.Errorf("%s is not on a bpf filesystem (bpffs is mounted at %s)", dir, mnt)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// onBpffs reports whether dir, or its nearest existing ancestor, is on a
// bpf filesystem.
func onBpffs(dir string) bool {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		var st unix.Statfs_t
		err := unix.Statfs(p, &st)
		if err == nil {
			return st.Type == unix.BPF_FS_MAGIC
		}
		if !errors.Is(err, unix.ENOENT) || p == filepath.Dir(p) {
			return false
		}
	}
}

// TracesCtx reads the traces_ctx_v1 entry of a thread: the span it works
// for, as a profiler other than weft sees it.
func (t *Tracer) TracesCtx(pid, tid uint32) (TracesCtxValue, bool, error) {
	var v TracesCtxValue
	key := uint64(pid)<<32 | uint64(tid)
	err := t.objs.TracesCtx.Lookup(key, &v)
	if errors.Is(err, ebpf.ErrKeyNotExist) {
		return v, false, nil
	}
	if err != nil {
		return v, false, fmt.Errorf("look up %s for %d/%d: %w", tracesCtxMap, pid, tid, err)
	}
	return v, true, nil
}
