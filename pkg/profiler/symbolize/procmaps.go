package symbolize

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// mapping is one executable line of /proc/<pid>/maps.
type mapping struct {
	start, end uint64
	offset     uint64 // file offset of start
	dev        uint64 // major<<32 | minor
	inode      uint64
	path       string // as the process sees it; "" for anonymous memory
	deleted    bool   // the file was unlinked or replaced after mapping
}

// fileBacked reports whether the mapping comes from a regular file.
func (m *mapping) fileBacked() bool {
	return m.inode != 0 && strings.HasPrefix(m.path, "/") && !strings.HasPrefix(m.path, "/memfd:")
}

// anonymous reports whether the mapping is memory a runtime could have
// generated code into: a JIT code cache or a memfd double mapping.
func (m *mapping) anonymous() bool {
	return m.path == "" || strings.HasPrefix(m.path, "[anon") ||
		strings.HasPrefix(m.path, "/memfd:") || m.path == "//anon"
}

// parseMaps returns the executable mappings, sorted by start. Lines it
// cannot read are skipped: the file is read while the process changes it.
func parseMaps(r io.Reader) ([]mapping, error) {
	var out []mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		m, ok := parseMapsLine(sc.Text())
		if ok {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read maps: %w", err)
	}
	slices.SortFunc(out, func(a, b mapping) int { return cmp.Compare(a.start, b.start) })
	return out, nil
}

// parseMapsLine reads "start-end perms offset major:minor inode   path".
func parseMapsLine(line string) (mapping, bool) {
	var m mapping
	rest := line
	next := func() string {
		rest = strings.TrimLeft(rest, " \t")
		f, r, _ := strings.Cut(rest, " ")
		rest = r
		return f
	}
	addrs, perms, off, dev, inode := next(), next(), next(), next(), next()
	if len(perms) < 3 || perms[2] != 'x' {
		return m, false
	}
	lo, hi, ok := strings.Cut(addrs, "-")
	if !ok {
		return m, false
	}
	var err [5]error
	m.start, err[0] = strconv.ParseUint(lo, 16, 64)
	m.end, err[1] = strconv.ParseUint(hi, 16, 64)
	m.offset, err[2] = strconv.ParseUint(off, 16, 64)
	m.inode, err[3] = strconv.ParseUint(inode, 10, 64)
	major, minor, _ := strings.Cut(dev, ":")
	maj, err4 := strconv.ParseUint(major, 16, 32)
	minr, err5 := strconv.ParseUint(minor, 16, 32)
	err[4] = cmp.Or(err4, err5)
	for _, e := range err {
		if e != nil {
			return m, false
		}
	}
	m.dev = maj<<32 | minr
	// The path may contain spaces; only the padding before it is not part
	// of it.
	m.path = strings.TrimLeft(rest, " \t")
	if p, ok := strings.CutSuffix(m.path, " (deleted)"); ok {
		m.path, m.deleted = p, true
	}
	return m, m.end > m.start
}

// findMapping returns the mapping holding addr.
func findMapping(maps []mapping, addr uint64) (*mapping, bool) {
	i, found := slices.BinarySearchFunc(maps, addr, func(m mapping, a uint64) int { return cmp.Compare(m.start, a) })
	if !found {
		i--
	}
	if i < 0 || addr >= maps[i].end {
		return nil, false
	}
	return &maps[i], true
}
