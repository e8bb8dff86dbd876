package tracer

import (
	"fmt"
	"io"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/weftdev/weft/pkg/kernel"
)

// propagationPrograms inject traceparent; they are loaded only when
// propagation is on (the tcp_bpf_sendmsg probes capture sends on the
// sockets that injection moves into the sockhash).
var propagationPrograms = map[string]bool{
	"weft_sockops":             true,
	"weft_sockops_any":         true,
	"weft_inject":              true,
	"weft_inject_sock":         true,
	"weft_tcp_bpf_sendmsg":     true,
	"weft_tcp_bpf_sendmsg_ret": true,
}

// socketPathPrograms are the tracepoint object's programs of the socket
// path (kernel.PathTracepoint); those of the syscall path
// (kernel.PathSyscalls) are its syscall tracepoints, the classic sock
// tracepoints and the sk_msg program that reads what syscall entry noted.
var socketPathPrograms = map[string]bool{
	"weft_sock_sent":     true,
	"weft_sock_received": true,
	"weft_inject_sock":   true,
}

var syscallPathPrograms = map[string]bool{
	"weft_sock_send": true,
	"weft_sock_recv": true,
	"weft_inject":    true,
}

// ioctlPrograms read OBI's ioctl packets (Options.IoctlPackets).
var ioctlPrograms = map[string]bool{
	"weft_enter_ioctl": true,
	"weft_sys_ioctl":   true,
}

// onPath reports whether a tracepoint-object program belongs to path p.
func onPath(p kernel.Path, name, section string) bool {
	if p != kernel.PathTracepoint && p != kernel.PathSyscalls {
		return true
	}
	syscall := syscallPathPrograms[name] || (strings.HasPrefix(section, "tracepoint/syscalls/") && !ioctlPrograms[name])
	if p == kernel.PathTracepoint {
		return !syscall
	}
	return !socketPathPrograms[name]
}

// runtimeHook reports whether a program of this ELF section is one of the
// runtimes' uprobes, loaded only with runtime hooks on.
func runtimeHook(section string) bool {
	kind, _, _ := strings.Cut(section, "/")
	return kind == "uprobe" || kind == "uretprobe"
}

// dropDisabled removes from spec the programs of features opts leaves
// off, and those of the other tracepoint path, so that the verifier
// spends no time on them and none of them can run.
func dropDisabled(spec *ebpf.CollectionSpec, opts Options) {
	for name, p := range spec.Programs {
		if (!opts.Propagation && propagationPrograms[name]) || (!opts.RuntimeHooks && runtimeHook(p.SectionName)) ||
			(!opts.IoctlPackets && ioctlPrograms[name]) || !onPath(opts.Path, name, p.SectionName) {
			delete(spec.Programs, name)
		}
	}
}

// attachesAtOpen reports whether Open attaches a program of this ELF
// section. perf_event programs (the stack sampler) attach only while
// sampling is on, to perf events StartSampling opens; uprobes (the Go
// runtime's hooks) per process, when one is classified (runtime.go).
func attachesAtOpen(section string) bool {
	kind, _, _ := strings.Cut(section, "/")
	return kind != "perf_event" && kind != "uprobe" && kind != "uretprobe"
}

// attachTarget is what some program types attach to.
type attachTarget struct {
	cgroup string           // cgroup v2 directory for sockops
	coll   *ebpf.Collection // for sk_msg: the sockhash it runs on
}

// attach picks the link type from the program's ELF section name, so the
// C source alone says where each program goes.
func attach(section string, prog *ebpf.Program, tgt attachTarget) (io.Closer, error) {
	kind, target, _ := strings.Cut(section, "/")
	switch kind {
	case "tracepoint":
		group, name, ok := strings.Cut(target, "/")
		if !ok {
			return nil, fmt.Errorf("bad tracepoint section %q", section)
		}
		return link.Tracepoint(group, name, prog, nil)
	case "tp_btf":
		return link.AttachTracing(link.TracingOptions{Program: prog})
	case "kprobe":
		return link.Kprobe(target, prog, nil)
	case "kretprobe":
		return link.Kretprobe(target, prog, nil)
	case "sockops":
		return link.AttachCgroup(link.CgroupOptions{Path: tgt.cgroup, Attach: ebpf.AttachCGroupSockOps, Program: prog})
	case "sk_msg":
		return attachSkMsg(prog, tgt.coll.Maps["client_socks"])
	}
	return nil, fmt.Errorf("no attach rule for section %q", section)
}

// skMsgAttachment detaches an sk_msg program from its sockhash. If weft
// dies without detaching, the kernel frees the sockhash with weft's last
// reference to it (the sockops link holds the other), and the sockets in
// it return to the plain TCP path.
type skMsgAttachment struct {
	opts link.RawAttachProgramOptions
}

func attachSkMsg(prog *ebpf.Program, sockhash *ebpf.Map) (io.Closer, error) {
	if sockhash == nil {
		return nil, fmt.Errorf("sk_msg program without a sockhash")
	}
	opts := link.RawAttachProgramOptions{Target: sockhash.FD(), Program: prog, Attach: ebpf.AttachSkMsgVerdict}
	if err := link.RawAttachProgram(opts); err != nil {
		return nil, err
	}
	return &skMsgAttachment{opts: opts}, nil
}

func (a *skMsgAttachment) Close() error {
	return link.RawDetachProgram(link.RawDetachProgramOptions(a.opts))
}
