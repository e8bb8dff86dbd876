package tracer

import (
	"debug/elf"
	"fmt"
	"io"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// nginx's exported functions that bpf/include/nginx.h probes: nginx links
// with -rdynamic for its dynamic modules, so even a stripped nginx (Debian's)
// has them in .dynsym.
const (
	ngxUpstreamInit = "ngx_http_upstream_init"
	ngxConnectPeer  = "ngx_event_connect_peer"
	ngxNeedsSymbols = 2
)

// isNginx reports whether the executable has nginx's upstream functions.
func isNginx(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	syms, _ := f.DynamicSymbols()
	found := 0
	for _, s := range syms {
		if (s.Name == ngxUpstreamInit || s.Name == ngxConnectPeer) && elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			found++
		}
	}
	return found == ngxNeedsSymbols
}

// attachNginx puts the upstream hooks on process pid only. C code keeps
// its stack, so uretprobes are safe here.
func attachNginx(progs *runtimePrograms, pid int) (io.Closer, error) {
	ex, err := link.OpenExecutable("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return nil, fmt.Errorf("open executable: %w", err)
	}
	var hooks hookLinks
	for _, p := range []struct {
		sym  string
		prog *ebpf.Program
		ret  bool
	}{
		{ngxUpstreamInit, progs.NgxUpstreamInit, false},
		{ngxUpstreamInit, progs.NgxUpstreamInitRet, true},
		{ngxConnectPeer, progs.NgxConnectPeer, false},
		{ngxConnectPeer, progs.NgxConnectPeerRet, true},
	} {
		attach := ex.Uprobe
		if p.ret {
			attach = ex.Uretprobe
		}
		l, err := attach(p.sym, p.prog, &link.UprobeOptions{PID: pid})
		if err != nil {
			hooks.Close()
			return nil, fmt.Errorf("uprobe %s: %w", p.sym, err)
		}
		hooks = append(hooks, l)
	}
	return hooks, nil
}
