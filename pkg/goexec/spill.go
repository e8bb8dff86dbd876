package goexec

import "golang.org/x/arch/x86/x86asm"

// receiverSlot is the stack slot (an offset from RSP once the prologue
// has made the frame) where a method's prologue spills its receiver
// (RAX under the register ABI) into the spill area its caller reserves
// above the return address, when nothing else in the function writes
// that slot or takes its address: at every call the body makes, the
// slot still holds the receiver. 0 when there is no such slot.
func receiverSlot(code []byte) int64 {
	var slot, frame int64
	framed, ok := false, true
	decode(code, func(off int, inst x86asm.Inst) bool {
		dst, toMem := inst.Args[0].(x86asm.Mem)
		if slot == 0 {
			switch {
			case inst.Op == x86asm.SUB && inst.Args[0] == x86asm.RSP:
				imm, isImm := inst.Args[1].(x86asm.Imm)
				framed, frame = isImm, int64(imm)
			case framed && toMem && inst.Op == x86asm.MOV && dst.Base == x86asm.RSP && dst.Index == 0 &&
				dst.Segment == 0 && inst.MemBytes == 8 && inst.Args[1] == x86asm.RAX:
				// Above the frame and the return address: no local's
				// address reaches it.
				if dst.Disp < frame+8 {
					ok = false
					return false
				}
				slot = dst.Disp
			case inst.Op == x86asm.CALL || writesRAX(inst):
				ok = false
				return false
			}
			return true
		}
		// The slot's one write is the spill: no other may overlap it, nor
		// may its address escape.
		if toMem && dst.Base == x86asm.RSP && inst.Op != x86asm.CMP && inst.Op != x86asm.TEST &&
			dst.Disp < slot+8 && dst.Disp+int64(max(inst.MemBytes, 1)) > slot {
			ok = false
			return false
		}
		if src, isMem := inst.Args[1].(x86asm.Mem); inst.Op == x86asm.LEA && isMem && src.Base == x86asm.RSP &&
			src.Disp <= slot && src.Disp+8 > slot {
			ok = false
			return false
		}
		return true
	})
	if !ok {
		return 0
	}
	return slot
}

// writesRAX reports whether inst's destination is RAX or a part of it.
func writesRAX(inst x86asm.Inst) bool {
	switch inst.Args[0] {
	case x86asm.RAX, x86asm.EAX, x86asm.AX, x86asm.AL, x86asm.AH:
		return inst.Op != x86asm.CMP && inst.Op != x86asm.TEST
	}
	return false
}
