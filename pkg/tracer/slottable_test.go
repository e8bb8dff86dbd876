package tracer

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

func slotTableImage(magic uint32, cells []slotCell, n int) []byte {
	b := make([]byte, slotTableHead+n*slotCellSize)
	binary.LittleEndian.PutUint32(b, magic)
	binary.LittleEndian.PutUint32(b[4:], uint32(n))
	for i, c := range cells {
		at := b[slotTableHead+i*slotCellSize:]
		binary.LittleEndian.PutUint32(at, c.tid)
		binary.LittleEndian.PutUint64(at[8:], c.addr)
	}
	return b
}

func TestParseSlotTable(t *testing.T) {
	img := slotTableImage(slotTableMagic, []slotCell{
		{100, 0x7f0000001000},
		{0, 0},                       // free
		{101, 0},                     // claimed, address not yet written
		{0, 0x7f0000002000},          // being freed
		{0xffffffff, 0x7f0000003000}, // not a tid
		{102, 0x7f0000004000},
	}, 8)
	got, err := parseSlotTable(img)
	if err != nil {
		t.Fatal(err)
	}
	want := []slotCell{{100, 0x7f0000001000}, {102, 0x7f0000004000}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("cells %v, want %v", got, want)
	}
}

// Before JNI_OnLoad the table is all zeros: nothing registered yet.
func TestParseSlotTableBeforeLoad(t *testing.T) {
	if got, err := parseSlotTable(make([]byte, slotTableHead+4*slotCellSize)); err != nil || got != nil {
		t.Errorf("cells %v, error %v; want none and no error", got, err)
	}
}

func TestParseSlotTableRefusesOtherLayouts(t *testing.T) {
	for name, tc := range map[string]struct {
		img  []byte
		want string
	}{
		"short": {[]byte{1, 2, 3}, "3 bytes"},
		"magic": {slotTableImage(0x32736677, nil, 4), "magic"},
		"cells": {slotTableImage(slotTableMagic, nil, 4)[:slotTableHead+3*slotCellSize], "4 cells"},
	} {
		if _, err := parseSlotTable(tc.img); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", name, err, tc.want)
		}
	}
}
