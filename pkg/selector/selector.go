// Package selector decides which processes weft traces and keeps the
// kernel's pid filter in step as processes start and listen.
//
// Selectors combine as a union. A selected process's children are traced
// too: the kernel follows every fork of a traced process, and at start-up
// the processes already running below a selected pid are marked. Cgroups
// are decided in the kernel by cgroup id, so a process that starts in one
// is traced from its first call; user space hears of such processes (and
// of followed children) at their first event and says why they are traced.
package selector

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/weftdev/weft/pkg/config"
)

// Filter is the kernel-side pid filter.
type Filter interface {
	SetPID(pid uint32, traced bool) error
	// SetPIDByCgroup marks a process found in a selected cgroup: the
	// kernel checks it again if it moves to another cgroup.
	SetPIDByCgroup(pid uint32) error
}

// System is where the selector looks: /proc and the cgroup2 mount.
type System struct {
	Proc       string // normally /proc
	CgroupRoot string // the cgroup2 mount; needed only to select cgroups
	Self       int    // weft's own pid, never traced
}

// Process is a traced process and why it is traced.
type Process struct {
	PID      int    `json:"pid"`
	Exe      string `json:"exe"`
	Selector string `json:"selector"` // e.g. pid=12, pid=12 (descendant), cgroup=/sys/fs/cgroup/x
}

// Selector applies a config.Select to the processes of a /proc tree.
type Selector struct {
	sel     config.Select
	exe     *regexp.Regexp
	sys     System
	cgroups []Cgroup
	filter  Filter
	log     *slog.Logger

	mu     sync.Mutex
	traced map[int]*Process
	// onTraced hears of each process as tracing begins (set before Sync).
	onTraced func(pid int)
}

// New checks the selection against the system (every pid must exist,
// every cgroup be a cgroup v2 directory, every container be found) and
// returns a selector for it.
func New(sel config.Select, sys System, f Filter) (*Selector, error) {
	s := &Selector{sel: sel, sys: sys, filter: f, traced: map[int]*Process{},
		log: slog.With("component", "selector")}
	if sel.Exe != "" {
		re, err := regexp.Compile(sel.Exe)
		if err != nil {
			return nil, fmt.Errorf("compile exe pattern: %w", err)
		}
		s.exe = re
	}
	for _, pid := range sel.PIDs {
		if pid <= 0 {
			return nil, fmt.Errorf("pid %d: not a process id", pid)
		}
		if _, err := os.Stat(filepath.Join(sys.Proc, strconv.Itoa(pid))); err != nil {
			return nil, fmt.Errorf("pid %d: no such process", pid)
		}
	}
	if len(sel.Cgroups)+len(sel.Containers) > 0 && sys.CgroupRoot == "" {
		return nil, errors.New("selecting by cgroup or container needs a cgroup v2 mount, and none was found")
	}
	for _, p := range sel.Cgroups {
		cg, err := resolveCgroup(sys.CgroupRoot, p, "cgroup="+p)
		if err != nil {
			return nil, err
		}
		s.cgroups = append(s.cgroups, cg)
	}
	for _, id := range sel.Containers {
		dir, err := resolveContainer(sys.Proc, sys.CgroupRoot, id)
		if err != nil {
			return nil, err
		}
		cg, err := resolveCgroup(sys.CgroupRoot, dir, "container="+id)
		if err != nil {
			return nil, err
		}
		s.cgroups = append(s.cgroups, cg)
	}
	return s, nil
}

// OnTraced sets what hears of each process as weft begins to trace it:
// its identity can be read while it lives (a short-lived client may be
// gone by the time its first events are read).
func (s *Selector) OnTraced(f func(pid int)) { s.onTraced = f }

// Cgroups are the selected cgroups, for the kernel side.
func (s *Selector) Cgroups() []Cgroup { return s.cgroups }

// SetFilter sets the kernel filter, once it is loaded: the selector is
// built first because the programs must know whether to report execs.
func (s *Selector) SetFilter(f Filter) { s.filter = f }

// NeedsRescan reports whether Sync must run periodically (ports and exe
// patterns pick up processes that start or listen later).
func (s *Selector) NeedsRescan() bool { return len(s.sel.Ports) > 0 || s.exe != nil }

// NeedsExecEvents reports whether new processes must be checked as they
// exec (selection by executable).
func (s *Selector) NeedsExecEvents() bool { return s.exe != nil }

// Sync scans /proc and marks every matching process traced, with the
// processes below each. It is cheap enough to run every few seconds;
// pids already marked are skipped.
func (s *Selector) Sync() error {
	if s.sel.All() {
		return nil
	}
	want := map[int]string{}
	for _, pid := range s.sel.PIDs {
		want[pid] = "pid=" + strconv.Itoa(pid)
	}
	if len(s.sel.Ports) > 0 {
		for _, port := range s.sel.Ports {
			pids, err := ListeningPIDs(s.sys.Proc, []int{port})
			if err != nil {
				return err
			}
			for _, p := range pids {
				want[p] = "port=" + strconv.Itoa(port)
			}
		}
	}
	if s.exe != nil {
		entries, err := os.ReadDir(s.sys.Proc)
		if err != nil {
			return fmt.Errorf("list processes: %w", err)
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err == nil && s.matchExe(pid) {
				want[pid] = "exe=" + s.sel.Exe
			}
		}
	}
	for _, cg := range s.cgroups {
		pids, err := cgroupMembers(cg.Path)
		if err != nil {
			return err
		}
		for _, p := range pids {
			s.markCgroup(p, cg.Selector)
		}
	}
	// Marked first, so that the kernel follows what they fork from now
	// on; then the processes they forked before, until a pass finds no
	// more (one forked during the previous pass).
	// Only roots new to this pass need their trees walked: the kernel
	// follows what older ones fork.
	fresh := map[int]string{}
	for pid, why := range want {
		if s.mark(pid, why) {
			fresh[pid] = why
		}
	}
	for pass := 0; pass < 4 && len(fresh) > 0; pass++ {
		tree, err := parents(s.sys.Proc)
		if err != nil {
			return err
		}
		found := false
		for pid, why := range fresh {
			for _, d := range descendants(tree, pid) {
				if s.mark(d, why+" (descendant)") {
					found = true
				}
			}
		}
		if !found {
			break
		}
	}
	return nil
}

// OnExec re-examines a process that just called execve: one selected by
// its executable, or one the kernel follows (a child of a traced process,
// a process of a selected cgroup) that user space meets now.
func (s *Selector) OnExec(pid int) {
	if s.exe != nil && s.matchExe(pid) {
		s.mark(pid, "exe="+s.sel.Exe)
		return
	}
	s.Seen(pid)
}

// Seen notes a process the kernel traced without user space marking it:
// a child of a traced process, or one of a selected cgroup. It is logged
// once, with the reason.
func (s *Selector) Seen(pid int) {
	s.mu.Lock()
	p := s.traced[pid]
	s.mu.Unlock()
	exe := s.exePath(pid)
	if p != nil {
		if exe != "" && exe != p.Exe { // the same process, a new program
			s.mu.Lock()
			p.Exe = exe
			s.mu.Unlock()
			s.log.Debug("traced process runs a new program", "pid", pid, "exe", exe)
		}
		return
	}
	why := s.reason(pid)
	s.mu.Lock()
	s.traced[pid] = &Process{PID: pid, Exe: exe, Selector: why}
	s.mu.Unlock()
	level := slog.LevelInfo
	if why == "all" { // every process: one line each would flood the log
		level = slog.LevelDebug
	}
	s.log.Log(context.Background(), level, "tracing process", "pid", pid, "exe", exe, "why", why)
}

// reason says why the kernel traces pid: its cgroup, else the nearest
// traced ancestor's reason.
func (s *Selector) reason(pid int) string {
	if len(s.cgroups) > 0 {
		if dir, err := cgroupOf(s.sys.Proc, s.sys.CgroupRoot, pid); err == nil {
			for _, cg := range s.cgroups {
				if under(dir, cg.Path) {
					return cg.Selector
				}
			}
		}
	}
	if s.sel.All() {
		return "all"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := pid
	for i := 0; i < 64; i++ {
		pp, ok := parentOf(s.sys.Proc, p)
		if !ok || pp <= 1 {
			break
		}
		if a := s.traced[pp]; a != nil {
			return strings.TrimSuffix(a.Selector, " (descendant)") + " (descendant)"
		}
		p = pp
	}
	if len(s.cgroups) > 0 { // the kernel found it in one; its path is not ours to read
		return "cgroup"
	}
	return "followed from a traced parent"
}

// OnExit forgets a process, saying so when it was traced.
func (s *Selector) OnExit(pid int) {
	s.mu.Lock()
	p := s.traced[pid]
	delete(s.traced, pid)
	s.mu.Unlock()
	if p != nil {
		s.log.Info("stopped tracing process", "pid", pid, "exe", p.Exe, "why", "exited")
	}
}

// Traced lists the pids marked so far.
func (s *Selector) Traced() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]int, 0, len(s.traced))
	for p := range s.traced {
		out = append(out, p)
	}
	return out
}

// Processes lists the traced processes user space knows of, by pid.
func (s *Selector) Processes() []Process {
	s.mu.Lock()
	out := make([]Process, 0, len(s.traced))
	for _, p := range s.traced {
		out = append(out, *p)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Process) int { return a.PID - b.PID })
	return out
}

// mark traces pid and reports whether it was new.
func (s *Selector) mark(pid int, why string) bool {
	return s.note(pid, why, func() error { return s.filter.SetPID(uint32(pid), true) })
}

func (s *Selector) markCgroup(pid int, why string) bool {
	return s.note(pid, why, func() error { return s.filter.SetPIDByCgroup(uint32(pid)) })
}

func (s *Selector) note(pid int, why string, set func() error) bool {
	s.mu.Lock()
	known := pid == s.sys.Self || s.traced[pid] != nil
	s.mu.Unlock()
	if known {
		return false
	}
	if err := set(); err != nil {
		s.log.Warn("cannot trace process", "pid", pid, "err", err)
		return false
	}
	exe := s.exePath(pid)
	s.mu.Lock()
	s.traced[pid] = &Process{PID: pid, Exe: exe, Selector: why}
	s.mu.Unlock()
	s.log.Info("tracing process", "pid", pid, "exe", exe, "why", why)
	if s.onTraced != nil {
		s.onTraced(pid)
	}
	return true
}

func (s *Selector) exePath(pid int) string {
	p, _ := os.Readlink(filepath.Join(s.sys.Proc, strconv.Itoa(pid), "exe"))
	return p
}

func (s *Selector) matchExe(pid int) bool {
	if pid == s.sys.Self {
		return false
	}
	if p := s.exePath(pid); p != "" && s.exe.MatchString(p) {
		return true
	}
	b, err := os.ReadFile(filepath.Join(s.sys.Proc, strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return false
	}
	return s.exe.MatchString(strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " "))
}
