package kernel

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// BPFFloor is what weft's programs need of the kernel beyond BTF, each
// with the Linux release that brought it. Distributions backport these,
// so they are probed, not read off the version: the newest, bpf_loop,
// makes Linux 5.17 the floor.
var BPFFloor = []struct {
	What  string
	Since string
	probe func() error
}{
	{"BPF ring buffer", "5.8", func() error { return features.HaveMapType(ebpf.RingBuf) }},
	{"bpf_get_current_task_btf", "5.11", func() error {
		return features.HaveProgramHelper(ebpf.TracePoint, asm.FnGetCurrentTaskBtf)
	}},
	{"bpf_task_pt_regs", "5.15", func() error { return features.HaveProgramHelper(ebpf.TracePoint, asm.FnTaskPtRegs) }},
	{"bpf_loop", "5.17", func() error { return features.HaveProgramHelper(ebpf.TracePoint, asm.FnLoop) }},
}

// CheckBPFFloor probes each of BPFFloor (it loads small programs, so it
// needs the privileges weft runs with) and names what is missing.
func CheckBPFFloor() error {
	var errs []error
	for _, f := range BPFFloor {
		err := f.probe()
		switch {
		case err == nil:
		case errors.Is(err, ebpf.ErrNotSupported):
			errs = append(errs, fmt.Errorf("the kernel lacks %s (Linux %s+, or a backport)", f.What, f.Since))
		default:
			errs = append(errs, fmt.Errorf("probe for %s: %w", f.What, err))
		}
	}
	return errors.Join(errs...)
}
