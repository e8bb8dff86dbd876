package symbolize

import (
	"cmp"
	"slices"
)

// sym is one named address range [start, end).
type sym struct {
	start, end uint64
	name       string
}

// symTable is sorted by start with no two entries at the same start.
type symTable []sym

// newSymTable sorts syms and gives each one without a size (end <= start)
// the range up to the next symbol, capped at maxUnsized bytes so that gaps
// after the last symbol of a region are not claimed by it. Of several
// symbols at one address, the one better reports true for wins.
func newSymTable(syms []sym, maxUnsized uint64, better func(a, b sym) bool) symTable {
	slices.SortStableFunc(syms, func(a, b sym) int { return cmp.Compare(a.start, b.start) })
	out := syms[:0]
	for _, s := range syms {
		if n := len(out); n > 0 && out[n-1].start == s.start {
			if better != nil && better(s, out[n-1]) {
				out[n-1] = s
			}
			continue
		}
		out = append(out, s)
	}
	for i := range out {
		if out[i].end > out[i].start {
			continue
		}
		end := out[i].start + maxUnsized
		if end < out[i].start { // wrapped past the top of the address space
			end = ^uint64(0)
		}
		if i+1 < len(out) && out[i+1].start < end {
			end = out[i+1].start
		}
		out[i].end = end
	}
	return slices.Clip(out)
}

// lookup returns the symbol whose range holds addr.
func (t symTable) lookup(addr uint64) (sym, bool) {
	i, found := slices.BinarySearchFunc(t, addr, func(s sym, a uint64) int { return cmp.Compare(s.start, a) })
	if !found {
		i-- // the last symbol starting below addr
	}
	if i < 0 || addr >= t[i].end {
		return sym{}, false
	}
	return t[i], true
}
