package tracer

import (
	"fmt"
	"io"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// attachesAtOpen reports whether Open attaches a program of this ELF
// section. perf_event programs (the stack sampler) attach only while
// sampling is on, to perf events StartSampling opens; uprobes (the Go
// runtime's hooks) per process, when one is classified (runtime.go);
// syscall programs never (user space runs them).
func attachesAtOpen(section string) bool {
	kind, _, _ := strings.Cut(section, "/")
	return kind != "perf_event" && kind != "uprobe" && kind != "uretprobe" && kind != "syscall"
}

// attachTarget is what some program types attach to.
type attachTarget struct {
	cgroup   string    // cgroup v2 directory for sockops
	sockhash *ebpf.Map // for sk_msg: the sockhash it runs on
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
		return attachSkMsg(prog, tgt.sockhash)
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

// attachAtOpen attaches, in the hook table's order, the loaded programs
// that attach at Open. An optional hook the kernel refuses is logged with
// what weft goes without; a required one fails Open.
func (t *Tracer) attachAtOpen(spec *ebpf.CollectionSpec, tgt attachTarget) error {
	for _, h := range hooks {
		prog, ok := t.coll.Programs[h.prog]
		if !ok || h.via != "" {
			continue
		}
		section := spec.Programs[h.prog].SectionName
		if !attachesAtOpen(section) {
			continue
		}
		l, err := attach(section, prog, tgt)
		if err != nil {
			if !h.optional() {
				return fmt.Errorf("attach %s (%s): %w", h.prog, section, err)
			}
			t.log.Warn("optional hook not attached", "program", h.prog, "section", section, "err", err, "lost", h.lost)
			t.unattached = append(t.unattached, h.prog)
			continue
		}
		t.links = append(t.links, l)
	}
	return nil
}
