package symbolize

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxPerfMapEntries bounds one process's JIT symbol table; a JVM that
// recompiles for days appends without end.
const maxPerfMapEntries = 1 << 20

// perfMap is a process's /tmp/perf-<pid>.map: the names of code a JIT
// generated. The runtime appends to it (and may rewrite it) as it
// compiles, so it is re-read whenever its size or mtime changes.
type perfMap struct {
	paths []string // where the file may be, first existing wins
	read  string   // the path last read; "" before the first read
	size  int64
	mtime time.Time
	syms  symTable
}

// refresh re-reads the file if it changed since the last read. A file
// that cannot be read keeps the names read before: the process may just
// have exited.
func (p *perfMap) refresh() error {
	var errs []error
	for _, path := range p.paths {
		st, err := os.Stat(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if path == p.read && st.Size() == p.size && st.ModTime().Equal(p.mtime) {
			return nil
		}
		syms, err := readPerfMap(path)
		if err != nil {
			return err
		}
		p.read, p.syms, p.size, p.mtime = path, syms, st.Size(), st.ModTime()
		return nil
	}
	return fmt.Errorf("no perf map: %w", errors.Join(errs...))
}

func readPerfMap(path string) (symTable, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open perf map: %w", err)
	}
	defer f.Close()
	syms, err := parsePerfMap(f)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return syms, nil
}

func (p *perfMap) lookup(addr uint64) (string, bool) {
	if p == nil {
		return "", false
	}
	s, ok := p.syms.lookup(addr)
	return s.name, ok
}

// parsePerfMap reads lines of "START SIZE name", both numbers in hex with
// or without 0x; the name may contain spaces. When code is replaced at the
// same address the later line wins.
func parsePerfMap(r io.Reader) (symTable, error) {
	var syms []sym
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() && len(syms) < maxPerfMapEntries {
		line := strings.TrimSpace(sc.Text())
		start, rest, ok1 := strings.Cut(line, " ")
		size, name, ok2 := strings.Cut(strings.TrimLeft(rest, " "), " ")
		name = strings.TrimSpace(name)
		if !ok1 || !ok2 || name == "" {
			continue
		}
		a, err1 := parseHex(start)
		n, err2 := parseHex(size)
		if err1 != nil || err2 != nil || n == 0 || a+n < a {
			continue
		}
		syms = append(syms, sym{start: a, end: a + n, name: name})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	// Reverse before the stable sort so that, at equal starts, the last
	// line written comes first and is the one kept.
	slices.Reverse(syms)
	slices.SortStableFunc(syms, func(a, b sym) int { return cmp.Compare(a.start, b.start) })
	return newSymTable(syms, 0, nil), nil
}

func parseHex(s string) (uint64, error) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	return strconv.ParseUint(s, 16, 64)
}
