package symbolize

import (
	"cmp"
	"debug/elf"
	"slices"
	"strings"
)

// maxUnsizedFunc bounds a function symbol without a size (hand-written
// assembly) to the next symbol or this many bytes.
const maxUnsizedFunc = 64 << 10

// elfSymbols returns the full symbol table, or the dynamic one that even
// stripped shared libraries keep.
func elfSymbols(f *elf.File) []elf.Symbol {
	if syms, err := f.Symbols(); err == nil && len(syms) > 0 {
		return syms
	}
	syms, _ := f.DynamicSymbols()
	return syms
}

// funcSymbols keeps the defined functions. Of aliases at one address
// (glibc's "__getpid" and "getpid") it keeps the one a person would
// write: fewest leading underscores, then global over weak over local.
func funcSymbols(raw []elf.Symbol) symTable {
	fns := make([]elf.Symbol, 0, len(raw))
	for _, s := range raw {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Section != elf.SHN_UNDEF && s.Name != "" {
			fns = append(fns, s)
		}
	}
	slices.SortFunc(fns, func(a, b elf.Symbol) int {
		return cmp.Or(
			cmp.Compare(a.Value, b.Value),
			cmp.Compare(leadingUnderscores(a.Name), leadingUnderscores(b.Name)),
			cmp.Compare(bindRank(a), bindRank(b)),
			cmp.Compare(len(a.Name), len(b.Name)),
			strings.Compare(a.Name, b.Name),
		)
	})
	syms := make([]sym, len(fns))
	for i, s := range fns {
		syms[i] = sym{start: s.Value, end: s.Value + s.Size, name: s.Name}
	}
	// Sorted best first, so keeping the first at each address is enough.
	return newSymTable(syms, maxUnsizedFunc, nil)
}

func bindRank(s elf.Symbol) int {
	switch elf.ST_BIND(s.Info) {
	case elf.STB_GLOBAL:
		return 0
	case elf.STB_WEAK:
		return 1
	default:
		return 2
	}
}
