package tracer

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/cilium/ebpf"
)

// The Java agent's library keeps every thread's mount-slot registration
// in a table, weft_slots (jni/weft_jni.h: the layout). A thread registers
// its slot once, and the kernel side sees the registration only if weft
// runs then; the agent asks for fresh ones every few seconds. So weft
// reads the table when it begins to follow a process: the threads that
// registered before weft started are followed by their mounted ids from
// their first request on, not by thread id until they register again.
const (
	slotTableSymbol = "weft_slots"
	slotTableMagic  = 0x31736677 // "wfs1"
	slotTableHead   = 8          // magic, cells
	slotCellSize    = 16         // tid, pad, addr
)

// slotCell is one registered thread: its tid and its slot's address.
type slotCell struct {
	tid  uint32
	addr uint64
}

// parseSlotTable returns the registered cells of a weft_slots image: tid
// and address both set (a cell being claimed or freed has one of them 0).
// None before the library's initialization (magic 0): no thread has
// registered yet, and those that will are seen registering.
func parseSlotTable(b []byte) ([]slotCell, error) {
	if len(b) < slotTableHead {
		return nil, fmt.Errorf("slot table: %d bytes", len(b))
	}
	le := binary.LittleEndian
	if magic := le.Uint32(b); magic == 0 {
		return nil, nil
	} else if magic != slotTableMagic {
		return nil, fmt.Errorf("slot table: magic %#x, want %#x (another agent version?)", magic, slotTableMagic)
	}
	n := int(le.Uint32(b[4:]))
	if len(b) != slotTableHead+n*slotCellSize {
		return nil, fmt.Errorf("slot table: %d cells in %d bytes", n, len(b))
	}
	var cells []slotCell
	for i := range n {
		c := b[slotTableHead+i*slotCellSize:]
		tid, addr := le.Uint32(c), le.Uint64(c[8:])
		if int32(tid) > 0 && addr != 0 {
			cells = append(cells, slotCell{tid, addr})
		}
	}
	return cells, nil
}

// readSlotTable reads weft_slots from process pid; none (and no error)
// when the process has not mapped the agent's library, or its library
// predates the table (its threads are followed from their next
// registration, as before).
func readSlotTable(pid int) ([]slotCell, error) {
	m, ok, err := findMapping(pid, isJNILib)
	if err != nil || !ok {
		return nil, err
	}
	if m.offset != 0 {
		return nil, fmt.Errorf("%s: first mapping at file offset %#x, not 0", m.mapFile, m.offset)
	}
	f, err := elf.Open(m.mapFile)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", m.mapFile, err)
	}
	defer f.Close()
	sym, ok, err := dynamicSymbol(f, slotTableSymbol)
	if err != nil || !ok {
		return nil, err
	}
	// The mapping at file offset 0 is the first loadable segment's.
	var base uint64
	found := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Off == 0 {
			base, found = p.Vaddr, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("%s: no loadable segment at file offset 0", m.mapFile)
	}
	b := make([]byte, sym.Size)
	mem, err := os.Open("/proc/" + strconv.Itoa(pid) + "/mem")
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	if _, err := mem.ReadAt(b, int64(m.start+sym.Value-base)); err != nil {
		return nil, fmt.Errorf("read %s of process %d: %w", slotTableSymbol, pid, err)
	}
	return parseSlotTable(b)
}

func dynamicSymbol(f *elf.File, name string) (elf.Symbol, bool, error) {
	syms, err := f.DynamicSymbols()
	if err != nil {
		return elf.Symbol{}, false, fmt.Errorf("dynamic symbols: %w", err)
	}
	for _, s := range syms {
		if s.Name == name {
			return s, true, nil
		}
	}
	return elf.Symbol{}, false, nil
}

// pullSlots gives the kernel side the slots of process pid's threads
// that registered before weft saw them register; how many it learned.
// A registration the kernel side has is as new as the table's or newer,
// and stays. A thread that ended meanwhile is left out: its tid must not
// keep a dead thread's slot.
func (t *Tracer) pullSlots(pid uint32) (int, error) {
	cells, err := readSlotTable(int(pid))
	if err != nil || len(cells) == 0 {
		return 0, err
	}
	n := 0
	for _, c := range cells {
		if !threadOf(pid, c.tid) {
			continue
		}
		if err := t.objs.ThreadSlot.Update(c.tid, c.addr, ebpf.UpdateNoExist); err != nil {
			if errors.Is(err, ebpf.ErrKeyExist) {
				continue
			}
			return n, fmt.Errorf("thread_slot: %w", err)
		}
		// Its exit may have come between the check and the update,
		// before there was an entry to forget.
		if !threadOf(pid, c.tid) {
			_ = t.objs.ThreadSlot.Delete(c.tid)
			continue
		}
		n++
	}
	if n > 0 {
		if err := t.objs.SlotsInUse.Set(uint32(1)); err != nil {
			return n, fmt.Errorf("slots_in_use: %w", err)
		}
	}
	return n, nil
}

// threadOf says whether tid is a live thread of process pid.
func threadOf(pid, tid uint32) bool {
	_, err := os.Stat("/proc/" + strconv.FormatUint(uint64(pid), 10) + "/task/" + strconv.FormatUint(uint64(tid), 10))
	return err == nil
}
