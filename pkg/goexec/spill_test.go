package goexec

import (
	"bytes"
	"testing"
)

// The receiver's slot is found only where nothing but the prologue's
// spill writes it.
func TestReceiverSlot(t *testing.T) {
	var (
		stackCheck = []byte{0x49, 0x3b, 0x66, 0x10, 0x76, 0x20}             // CMPQ SP, 0x10(R14); JBE
		prologue   = []byte{0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x58} // PUSHQ BP; MOVQ SP, BP; SUBQ $0x58, SP
		spillAX    = []byte{0x48, 0x89, 0x44, 0x24, 0x68}                   // MOVQ AX, 0x68(SP)
		reload     = []byte{0x48, 0x8b, 0x74, 0x24, 0x68}                   // MOVQ 0x68(SP), SI
		call       = []byte{0xe8, 0, 0, 0, 0}                               // CALL
		storeBX    = []byte{0x48, 0x89, 0x5c, 0x24, 0x68}                   // MOVQ BX, 0x68(SP)
		zero16     = []byte{0x44, 0x0f, 0x11, 0x7c, 0x24, 0x60}             // MOVUPS X15, 0x60(SP)
		leaSlot    = []byte{0x48, 0x8d, 0x7c, 0x24, 0x68}                   // LEAQ 0x68(SP), DI
		spillLocal = []byte{0x48, 0x89, 0x44, 0x24, 0x20}                   // MOVQ AX, 0x20(SP)
		clobberAX  = []byte{0x31, 0xc0}                                     // XORL AX, AX
	)
	for _, tc := range []struct {
		name string
		code [][]byte
		want int64
	}{
		{"spilled", [][]byte{stackCheck, prologue, spillAX, call, reload, call}, 0x68},
		{"stored again", [][]byte{stackCheck, prologue, spillAX, call, storeBX, call}, 0},
		{"overwritten by a wider store", [][]byte{stackCheck, prologue, spillAX, call, zero16, call}, 0},
		{"address taken", [][]byte{stackCheck, prologue, spillAX, leaSlot, call}, 0},
		{"a local, not the spill area", [][]byte{stackCheck, prologue, spillLocal, call}, 0},
		{"after a call", [][]byte{stackCheck, prologue, call, spillAX}, 0},
		{"after RAX changed", [][]byte{stackCheck, prologue, clobberAX, spillAX, call}, 0},
		{"before the frame", [][]byte{stackCheck, spillAX, prologue, call}, 0},
	} {
		if got := receiverSlot(bytes.Join(tc.code, nil)); got != tc.want {
			t.Errorf("%s: slot %#x, want %#x", tc.name, got, tc.want)
		}
	}
}
