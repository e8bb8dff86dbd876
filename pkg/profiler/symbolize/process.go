package symbolize

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// process is what the symbolizer remembers about one pid: its executable
// mappings and, once a frame needs it, its JIT perf map. Both outlive the
// process itself, so samples read after it exited still resolve.
type process struct {
	maps     []mapping
	readAt   time.Time // last attempt to read maps
	perf     *perfMap  // nil until first needed
	perfAt   time.Time // last check of the perf map
	verified map[binaryKey]bool
}

// current reports whether a cached binary is the file this process maps.
// Callers check once per process and binary (verified): a stat, where
// parsing again would cost a full read.
func (p *process) current(key binaryKey, obj *object, paths []string) bool {
	id, ok := statFirst(paths)
	if ok && id != obj.id {
		return false
	}
	// Unverifiable (the process is gone) is trusted: the cache is all
	// there is.
	p.verify(key)
	return true
}

func (p *process) verify(key binaryKey) {
	if p.verified == nil {
		p.verified = map[binaryKey]bool{}
	}
	p.verified[key] = true
}

// procPath joins parts under <procRoot>/<pid>.
func (s *Symbolizer) procPath(pid uint32, parts ...string) string {
	return filepath.Join(append([]string{s.opts.ProcRoot, strconv.FormatUint(uint64(pid), 10)}, parts...)...)
}

// readMaps re-reads the process's mappings, keeping the old ones if that
// fails (the process may have exited).
func (s *Symbolizer) readMaps(p *process, pid uint32, now time.Time) {
	p.readAt = now
	f, err := os.Open(s.procPath(pid, "maps"))
	if err != nil {
		s.log.Debug("read maps", "pid", pid, "err", err)
		return
	}
	defer f.Close()
	maps, err := parseMaps(f)
	if err != nil {
		s.log.Debug("read maps", "pid", pid, "err", err)
		return
	}
	p.maps = maps
}

// mappingFor finds the mapping of addr, re-reading the maps when it is
// not there (a library was loaded or code generated since), at most once
// per refresh interval.
func (s *Symbolizer) mappingFor(p *process, pid uint32, addr uint64) (*mapping, bool) {
	if m, ok := findMapping(p.maps, addr); ok {
		return m, true
	}
	now := s.now()
	if now.Sub(p.readAt) < s.opts.RefreshInterval {
		return nil, false
	}
	s.readMaps(p, pid, now)
	return findMapping(p.maps, addr)
}

// jitName looks addr up in the process's perf map, re-checking the file
// at most once per refresh interval.
func (s *Symbolizer) jitName(p *process, pid uint32, addr uint64) (string, bool) {
	if p.perf == nil {
		p.perf = &perfMap{paths: s.perfMapPaths(pid)}
	}
	if now := s.now(); now.Sub(p.perfAt) >= s.opts.RefreshInterval {
		p.perfAt = now
		if err := p.perf.refresh(); err != nil {
			s.log.Debug("read perf map", "pid", pid, "err", err)
		}
	}
	return p.perf.lookup(addr)
}

// perfMapPaths lists where a process's perf map may be. A runtime in a
// container names the file after its pid in its own namespace, and writes
// it to its own /tmp.
func (s *Symbolizer) perfMapPaths(pid uint32) []string {
	paths := []string{s.procPath(pid, "root", "tmp", fmt.Sprintf("perf-%d.map", pid))}
	if ns, ok := s.nsPID(pid); ok && ns != pid {
		paths = append(paths, s.procPath(pid, "root", "tmp", fmt.Sprintf("perf-%d.map", ns)))
	}
	return paths
}

// nsPID reads the pid in the process's innermost pid namespace (the last
// field of NSpid in /proc/<pid>/status).
func (s *Symbolizer) nsPID(pid uint32) (uint32, bool) {
	f, err := os.Open(s.procPath(pid, "status"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "NSpid:")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseUint(fields[len(fields)-1], 10, 32)
		return uint32(ns), err == nil
	}
	return 0, false
}

// binaryPaths lists where the file of a mapping can be opened: through
// the process's root, so containers resolve against their own files, then
// through map_files, which still works when the file was deleted or
// replaced after it was mapped.
func (s *Symbolizer) binaryPaths(pid uint32, m *mapping) []string {
	var paths []string
	if !m.deleted {
		paths = append(paths, s.procPath(pid, "root", m.path))
	}
	return append(paths, s.procPath(pid, "map_files", fmt.Sprintf("%x-%x", m.start, m.end)))
}
