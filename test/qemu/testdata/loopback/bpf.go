package main

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
)

// checkBPFKprobes attaches BPF programs as a kprobe and a kretprobe on
// tcp_sendmsg, as weft's kprobe path does, and checks that both count the
// sends of a loopback exchange.
func checkBPFKprobes() error {
	counts, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: 2})
	if err != nil {
		return fmt.Errorf("map: %w", err)
	}
	defer counts.Close()
	attach := []struct {
		name string
		key  int32
		fn   func(string, *ebpf.Program, *link.KprobeOptions) (link.Link, error)
	}{
		{"kprobe", 0, link.Kprobe},
		{"kretprobe", 1, link.Kretprobe},
	}
	for _, a := range attach {
		prog, err := counterProgram(counts, a.key)
		if err != nil {
			return fmt.Errorf("%s program: %w", a.name, err)
		}
		defer prog.Close()
		l, err := a.fn("tcp_sendmsg", prog, nil)
		if err != nil {
			return fmt.Errorf("attach %s: %w", a.name, err)
		}
		defer l.Close()
	}
	if err := exchange(); err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	var errs []error
	for _, a := range attach {
		var n uint64
		if err := counts.Lookup(a.key, &n); err != nil {
			return fmt.Errorf("read %s count: %w", a.name, err)
		}
		fmt.Printf("bpf %s tcp_sendmsg hits=%d\n", a.name, n)
		if n < 2 {
			errs = append(errs, fmt.Errorf("bpf %s: %d hits for 2 sends", a.name, n))
		}
	}
	return errors.Join(errs...)
}

// counterProgram returns a program that atomically increments counts[key].
func counterProgram(counts *ebpf.Map, key int32) (*ebpf.Program, error) {
	insns := asm.Instructions{
		asm.StoreImm(asm.RFP, -4, int64(key), asm.Word),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -4),
		asm.LoadMapPtr(asm.R1, counts.FD()),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "out"),
		asm.Mov.Imm(asm.R1, 1),
		asm.StoreXAdd(asm.R0, asm.R1, asm.DWord),
		asm.Mov.Imm(asm.R0, 0).WithSymbol("out"),
		asm.Return(),
	}
	return ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.Kprobe, Instructions: insns, License: "GPL"})
}
