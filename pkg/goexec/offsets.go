package goexec

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
)

// GOffsets are where runtime.g keeps the goroutine's id and, since Go
// 1.21, its creator's id: goroutines are named by id, which Go never
// reuses (g structs it does), and a goroutine's parent is read, not hooked.
type GOffsets struct {
	Goid       uint16
	ParentGoid uint16 // 0: this Go has none (before 1.21)
	From       string // "DWARF" or "table"
}

// gOffsetsByVersion are the offsets of Go releases' runtime.g, read from
// the DWARF of binaries each toolchain built (TestGOffsetsTable checks the
// toolchains this machine has against DWARF). A stripped binary of a Go
// not listed here is followed fail-closed.
var gOffsetsByVersion = map[string]GOffsets{
	"go1.18": {Goid: 152},
	"go1.19": {Goid: 152},
	"go1.20": {Goid: 152},
	"go1.21": {Goid: 152, ParentGoid: 272},
	"go1.22": {Goid: 152, ParentGoid: 272},
	"go1.23": {Goid: 160, ParentGoid: 280},
	"go1.24": {Goid: 160, ParentGoid: 280},
	"go1.25": {Goid: 152, ParentGoid: 272},
	"go1.26": {Goid: 152, ParentGoid: 280},
	"go1.27": {Goid: 152, ParentGoid: 280},
}

// gOffsets reads the offsets from DWARF, else from the table.
func gOffsets(f *elf.File, version string) (GOffsets, error) {
	if d, err := f.DWARF(); err == nil {
		o, err := dwarfGOffsets(d)
		if err == nil {
			return o, nil
		}
		if !errors.Is(err, errNoRuntimeG) {
			return GOffsets{}, err
		}
	}
	if o, ok := gOffsetsByVersion[minorVersion(version)]; ok {
		o.From = "table"
		return o, nil
	}
	return GOffsets{}, fmt.Errorf("no DWARF and no runtime.g offsets known for %s", version)
}

var errNoRuntimeG = errors.New("runtime.g not in DWARF")

func dwarfGOffsets(d *dwarf.Data) (GOffsets, error) {
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return GOffsets{}, fmt.Errorf("read DWARF: %w", err)
		}
		if e == nil {
			return GOffsets{}, errNoRuntimeG
		}
		if e.Tag != dwarf.TagStructType || e.Val(dwarf.AttrName) != "runtime.g" {
			if e.Tag != dwarf.TagCompileUnit {
				r.SkipChildren()
			}
			continue
		}
		o := GOffsets{From: "DWARF"}
		for {
			m, err := r.Next()
			if err != nil {
				return GOffsets{}, fmt.Errorf("read DWARF: %w", err)
			}
			if m == nil || m.Tag == 0 {
				break
			}
			off, ok := m.Val(dwarf.AttrDataMemberLoc).(int64)
			if m.Tag != dwarf.TagMember || !ok {
				continue
			}
			switch m.Val(dwarf.AttrName) {
			case "goid":
				o.Goid = uint16(off)
			case "parentGoid":
				o.ParentGoid = uint16(off)
			}
		}
		if o.Goid == 0 {
			return GOffsets{}, errors.New("runtime.g has no goid in DWARF")
		}
		return o, nil
	}
}

// minorVersion is "go1.N" of "go1.N.P" or "go1.Nrc1".
func minorVersion(v string) string {
	for i, dots := 0, 0; i < len(v); i++ {
		if v[i] == '.' {
			dots++
			if dots == 2 {
				return v[:i]
			}
		}
		if v[i] >= 'a' && v[i] <= 'z' && i > 4 {
			return v[:i]
		}
	}
	return v
}
