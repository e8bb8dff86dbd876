package symbolize

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// maxKernelFunc bounds how far past its start a kernel symbol may claim an
// address: no kernel function is this large, so an address further away
// lies in a gap (or an unlisted module) and stays unknown.
const maxKernelFunc = 1 << 20

// kernelSymbols is the text part of /proc/kallsyms.
type kernelSymbols struct {
	syms symTable
	// hidden is set when every address read as zero: kptr_restrict hides
	// them from readers without CAP_SYSLOG, so nothing can be resolved.
	hidden bool
}

// moduleSep joins a symbol name and its module in sym.name, which keeps
// one compact table for the 100k+ kernel symbols.
const moduleSep = "\x00"

func loadKallsyms(path string) (*kernelSymbols, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open kallsyms: %w", err)
	}
	defer f.Close()
	ks, err := parseKallsyms(f)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return ks, nil
}

// parseKallsyms reads lines of "address type name [module]".
func parseKallsyms(r io.Reader) (*kernelSymbols, error) {
	var syms []sym
	sawZero := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		switch fields[1] {
		case "t", "T", "w", "W": // code; data symbols never hold an IP
		default:
			continue
		}
		addr, err := strconv.ParseUint(fields[0], 16, 64)
		if err != nil {
			continue
		}
		if addr == 0 {
			sawZero = true
			continue
		}
		name := fields[2]
		if len(fields) > 3 {
			name += moduleSep + strings.Trim(fields[3], "[]")
		}
		syms = append(syms, sym{start: addr, name: name})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(syms) == 0 && sawZero {
		return &kernelSymbols{hidden: true}, nil
	}
	return &kernelSymbols{syms: newSymTable(syms, maxKernelFunc, preferKernelName)}, nil
}

// preferKernelName picks between aliases at one address, preferring fewer
// leading underscores: markers such as "_stext" share an address with a
// real function.
func preferKernelName(a, b sym) bool {
	return leadingUnderscores(a.name) < leadingUnderscores(b.name)
}

// lookup returns the function and module ("" for the core kernel).
func (k *kernelSymbols) lookup(addr uint64) (name, module string, ok bool) {
	if k == nil || k.hidden {
		return "", "", false
	}
	s, ok := k.syms.lookup(addr)
	if !ok {
		return "", "", false
	}
	name, module, _ = strings.Cut(s.name, moduleSep)
	return name, module, true
}

func leadingUnderscores(s string) int {
	return len(s) - len(strings.TrimLeft(s, "_"))
}
