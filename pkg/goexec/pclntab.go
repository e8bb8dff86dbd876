package goexec

import (
	"debug/elf"
	"debug/gosym"
	"encoding/binary"
	"errors"
	"fmt"
)

// FuncTable reads the Go function table of f (syms: its ELF symbols, if
// any). Go keeps it in every binary, even one linked with -s -w, so the
// functions of stripped Go programs are found too. nil, nil: f has none.
func FuncTable(f *elf.File, syms []elf.Symbol) (*gosym.Table, error) {
	sect := f.Section(".gopclntab")
	if sect == nil {
		sect = f.Section(".data.rel.ro.gopclntab") // PIE builds
	}
	if sect == nil {
		return nil, nil
	}
	data, err := sect.Data()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", sect.Name, err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, goTextStart(f, data, syms)))
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", sect.Name, err)
	}
	if len(tab.Funcs) == 0 {
		return nil, errors.New("go function table is empty")
	}
	return tab, nil
}

// goTextStart finds the value of runtime.text, which the table's PCs are
// relative to. It differs from the .text section start in cgo binaries.
func goTextStart(f *elf.File, pclntab []byte, syms []elf.Symbol) uint64 {
	for _, s := range syms {
		if s.Name == "runtime.text" {
			return s.Value
		}
	}
	text := f.Section(".text")
	// Go 1.18+ tables record it too (word 2 of the header), unless left
	// for a dynamic relocation to fill in, as in PIE builds.
	if v, ok := pclntabTextStart(pclntab, f.ByteOrder); ok && v != 0 {
		if text == nil || (v >= text.Addr && v < text.Addr+text.Size) {
			return v
		}
	}
	if text != nil {
		return text.Addr
	}
	return 0
}

func pclntabTextStart(d []byte, order binary.ByteOrder) (uint64, bool) {
	if len(d) < 8 {
		return 0, false
	}
	magic := order.Uint32(d)
	if magic != 0xfffffff0 && magic != 0xfffffff1 { // Go 1.18 and 1.20 formats
		return 0, false
	}
	ptr := int(d[7])
	off := 8 + 2*ptr
	switch {
	case ptr == 8 && len(d) >= off+8:
		return order.Uint64(d[off:]), true
	case ptr == 4 && len(d) >= off+4:
		return uint64(order.Uint32(d[off:])), true
	}
	return 0, false
}
