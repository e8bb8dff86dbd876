// Package probesite chooses where a uprobe on an x86-64 function of a
// native (C) library costs one trap. The kernel emulates a few probed
// instructions (push of a register, nop, call, jmp and conditional jumps
// with a relative target); any other it executes out of line with the
// single-step flag set, a second trap. On this project's VM that second
// trap costs ~15 µs against ~0.45 µs for an emulated probe
// (docs/benchmarks.md, "TLS capture"), more than all the BPF behind it.
//
// A probe that needs only the arguments can sit at the first emulated
// instruction before any argument register changes (EntrySite). A probe
// that needs the return sits at a function's entry (a return probe takes
// the return address there): where that instruction is not emulated,
// the function may hand its arguments unchanged to an inner one whose
// entry is (Delegate).
package probesite

import (
	"bytes"
	"debug/elf"
	"fmt"
	"slices"

	"golang.org/x/arch/x86/x86asm"
)

// walkLimit bounds how many instructions a search decodes: a prologue is
// short, and a site far from the entry would mean code this package does
// not understand.
const walkLimit = 16

// endbr64 marks an indirect branch target (CET).
var endbr64 = []byte{0xf3, 0x0f, 0x1e, 0xfa}

// Args are the System V argument registers, in order.
var Args = []x86asm.Reg{x86asm.RDI, x86asm.RSI, x86asm.RDX, x86asm.RCX, x86asm.R8, x86asm.R9}

// Emulated reports whether the kernel emulates the instruction code
// begins with when a uprobe sits on it (arch/x86/kernel/uprobes.c:
// push_setup_xol_ops, branch_setup_xol_ops), prefixes excluded.
func Emulated(code []byte) bool {
	if len(code) == 0 {
		return false
	}
	b := code[0]
	switch {
	case b >= 0x50 && b <= 0x57: // push %r64
		return true
	case b == 0x41 && len(code) > 1 && code[1] >= 0x50 && code[1] <= 0x57: // push %r8..%r15
		return true
	case b == 0x90, b == 0xe8, b == 0xe9, b == 0xeb: // nop, call, jmp rel32, jmp rel8
		return true
	case b >= 0x70 && b <= 0x7f: // jcc rel8
		return true
	case b == 0x0f && len(code) > 1 && code[1] >= 0x80 && code[1] <= 0x8f: // jcc rel32
		return true
	}
	return false
}

// EntrySite is the offset in a function's code of its first emulated
// instruction when every instruction before it runs on each call and
// leaves the first nargs argument registers as they were at entry;
// false when there is none within reach. A system call may be among
// those instructions (a libc wrapper's): the probe then fires once it
// returned.
func EntrySite(code []byte, nargs int) (int, bool) {
	return SiteAfter(code, 0, Args[:nargs]...)
}

// SiteAfter is the offset of the first emulated instruction at or after
// offset from when every instruction from there to it runs each time the
// one at from does and leaves the registers keep as they were; false
// when there is none within reach.
func SiteAfter(code []byte, from int, keep ...x86asm.Reg) (int, bool) {
	site, found := -1, false
	walk(code, from, keep, func(off int, inst x86asm.Inst) bool {
		if Emulated(code[off:]) {
			site, found = off, true
		}
		return false
	})
	return site, found
}

// Delegate is the target of a function's first direct call or jump when
// the instructions before it run on each call and leave the first nargs
// argument registers as they were at entry: a function that takes the
// same arguments (the function's code starts at virtual address base).
func Delegate(code []byte, base uint64, nargs int) (uint64, bool) {
	var target uint64
	found := false
	walk(code, 0, Args[:nargs], func(off int, inst x86asm.Inst) bool {
		switch {
		case (inst.Op == x86asm.CALL || inst.Op == x86asm.JMP) && (code[off] == 0xe8 || code[off] == 0xe9):
			target, found = relTarget(base, off, inst)
			return false
		case (inst.Op == x86asm.PUSH || inst.Op == x86asm.NOP) && Emulated(code[off:]):
			return true // changes no argument
		}
		return false
	})
	return target, found
}

// Calls reports whether code, which starts at virtual address base, makes
// a direct call or jump to any of targets.
func Calls(code []byte, base uint64, targets ...uint64) bool {
	called := false
	direct(code, base, func(_ int, _ x86asm.Op, t uint64) {
		for _, want := range targets {
			called = called || t == want
		}
	})
	return called
}

// CallSites lists the offsets of code's direct calls to target (code
// starts at virtual address base).
func CallSites(code []byte, base, target uint64) []uint64 {
	var out []uint64
	direct(code, base, func(off int, op x86asm.Op, t uint64) {
		if op == x86asm.CALL && t == target {
			out = append(out, uint64(off))
		}
	})
	return out
}

// direct hands visit each direct call or jump of code with its target.
func direct(code []byte, base uint64, visit func(off int, op x86asm.Op, target uint64)) {
	for off := 0; off < len(code); {
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			off++ // data or padding: resynchronise on the next byte
			continue
		}
		if inst.Op == x86asm.CALL || inst.Op == x86asm.JMP {
			if t, ok := relTarget(base, off, inst); ok {
				visit(off, inst.Op, t)
			}
		}
		off += inst.Len
	}
}

// walk decodes code from offset from and hands visit each instruction
// that is not a plain step (a step: it does not branch, and it writes no
// register of keep), until visit says stop, a step changes a register of
// keep or the walk goes out of reach.
func walk(code []byte, from int, keep []x86asm.Reg, visit func(off int, inst x86asm.Inst) bool) {
	for off, n := from, 0; off < len(code) && n < walkLimit; n++ {
		if bytes.HasPrefix(code[off:], endbr64) {
			off += len(endbr64) // x86asm does not decode it; it changes no register
			continue
		}
		inst, err := x86asm.Decode(code[off:], 64)
		if err != nil {
			return
		}
		step, known := plainStep(code[off:], inst, keep)
		if !known {
			return
		}
		if !step && !visit(off, inst) {
			return
		}
		off += inst.Len
	}
}

// syscallClobbers are the registers a system call does not give back.
var syscallClobbers = []x86asm.Reg{x86asm.RAX, x86asm.RCX, x86asm.R11}

// plainStep says whether inst is a step that keeps the registers of keep
// (step), or something for the walk's visitor to judge (!step); known is
// false for what neither is: a register of keep overwritten, or an
// instruction this package does not model.
func plainStep(code []byte, inst x86asm.Inst, keep []x86asm.Reg) (step, known bool) {
	if Emulated(code) {
		return false, true
	}
	switch inst.Op {
	case x86asm.TEST, x86asm.CMP, x86asm.NOP:
		return true, true
	case x86asm.SYSCALL:
		// The kernel returns with every register as it was but RAX, RCX
		// and R11: a site past it fires once the system call is done.
		for _, r := range syscallClobbers {
			if slices.Contains(keep, r) {
				return false, false
			}
		}
		return true, true
	case x86asm.MOV, x86asm.MOVSXD, x86asm.MOVZX, x86asm.MOVSX, x86asm.LEA,
		x86asm.XOR, x86asm.SUB, x86asm.ADD, x86asm.AND, x86asm.OR, x86asm.INC, x86asm.DEC,
		x86asm.MOVUPS, x86asm.MOVAPS, x86asm.MOVDQU:
		r, isReg := inst.Args[0].(x86asm.Reg)
		if !isReg {
			return true, true // a store: registers keep their values
		}
		keeps := !slices.Contains(keep, widest(r))
		return keeps, keeps
	}
	return false, true
}

// widest names the 64-bit register that r is part of.
func widest(r x86asm.Reg) x86asm.Reg {
	switch {
	case r >= x86asm.AL && r <= x86asm.BL:
		return x86asm.RAX + (r - x86asm.AL)
	case r >= x86asm.AH && r <= x86asm.BH:
		return x86asm.RAX + (r - x86asm.AH)
	case r >= x86asm.SPB && r <= x86asm.R15B:
		return x86asm.RSP + (r - x86asm.SPB)
	case r >= x86asm.AX && r <= x86asm.R15W:
		return x86asm.RAX + (r - x86asm.AX)
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return x86asm.RAX + (r - x86asm.EAX)
	}
	return r
}

// relTarget is where a direct call or jump at off leads.
func relTarget(base uint64, off int, inst x86asm.Inst) (uint64, bool) {
	rel, ok := inst.Args[0].(x86asm.Rel)
	if !ok {
		return 0, false
	}
	return base + uint64(off+inst.Len) + uint64(int64(rel)), true
}

// File is an ELF file's dynamic function symbols and executable code.
type File struct {
	f     *elf.File
	funcs map[string]elf.Symbol
}

// Open reads the dynamic (exported) function symbols of the ELF file at
// path.
func Open(path string) (*File, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dynamic symbols of %s: %w", path, err)
	}
	funcs := map[string]elf.Symbol{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			funcs[s.Name] = s
		}
	}
	return &File{f: f, funcs: funcs}, nil
}

// Close releases the file.
func (f *File) Close() error { return f.f.Close() }

// Func is one function: its virtual address and its code (its symbol's
// size, or walkLimit's reach when the symbol gives none).
type Func struct {
	Addr uint64
	Code []byte
}

// maxInst is the longest x86-64 instruction.
const maxInst = 15

// Func returns the exported function name.
func (f *File) Func(name string) (Func, bool) {
	s, ok := f.funcs[name]
	if !ok {
		return Func{}, false
	}
	n := s.Size
	if n == 0 {
		n = walkLimit * maxInst
	}
	return f.At(s.Value, n)
}

// At returns n bytes of code from virtual address addr (fewer where the
// executable segment ends).
func (f *File) At(addr, n uint64) (Func, bool) {
	for _, p := range f.f.Progs {
		if p.Type != elf.PT_LOAD || p.Flags&elf.PF_X == 0 || addr < p.Vaddr || addr >= p.Vaddr+p.Filesz {
			continue
		}
		n = min(n, p.Vaddr+p.Filesz-addr)
		code := make([]byte, n)
		if _, err := p.ReadAt(code, int64(addr-p.Vaddr)); err != nil {
			return Func{}, false
		}
		return Func{Addr: addr, Code: code}, true
	}
	return Func{}, false
}

// Offset is the file offset of virtual address addr in an executable
// segment: what a uprobe is attached at.
func (f *File) Offset(addr uint64) (uint64, bool) {
	for _, p := range f.f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && addr >= p.Vaddr && addr < p.Vaddr+p.Filesz {
			return addr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// EntryOffset is the file offset at which a probe of the exported
// function name of the ELF file at path, reading its first nargs
// arguments at entry, costs one trap where the code allows (EntrySite),
// else the function's entry.
func EntryOffset(path, name string, nargs int) (uint64, error) {
	f, err := Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fn, ok := f.Func(name)
	if !ok {
		return 0, fmt.Errorf("%s: no function %s", path, name)
	}
	addr := fn.Addr
	if off, ok := EntrySite(fn.Code, nargs); ok {
		addr += uint64(off)
	}
	at, ok := f.Offset(addr)
	if !ok {
		return 0, fmt.Errorf("%s: %s at %#x is in no executable segment", path, name, addr)
	}
	return at, nil
}
