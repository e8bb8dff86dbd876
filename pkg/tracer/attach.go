package tracer

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

// attach picks the link type from the program's ELF section name, so the
// C source alone says where each program goes.
func attach(section string, prog *ebpf.Program) (link.Link, error) {
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
	}
	return nil, fmt.Errorf("no attach rule for section %q", section)
}
