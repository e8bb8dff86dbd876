// Package selector decides which processes weft traces and keeps the
// kernel's pid filter in step as processes start and listen.
package selector

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/weftdev/weft/pkg/config"
)

// Filter is the kernel-side pid filter.
type Filter interface {
	SetPID(pid uint32, traced bool) error
}

// Selector applies a config.Select to the processes of a /proc tree.
type Selector struct {
	sel    config.Select
	exe    *regexp.Regexp
	proc   string
	self   int
	filter Filter
	traced map[int]bool
	log    *slog.Logger
}

// New returns a selector over procRoot (normally "/proc").
func New(sel config.Select, procRoot string, self int, f Filter) (*Selector, error) {
	s := &Selector{sel: sel, proc: procRoot, self: self, filter: f, traced: map[int]bool{},
		log: slog.With("component", "selector")}
	if sel.Exe != "" {
		re, err := regexp.Compile(sel.Exe)
		if err != nil {
			return nil, fmt.Errorf("compile exe pattern: %w", err)
		}
		s.exe = re
	}
	return s, nil
}

// SetFilter sets the kernel filter, once it is loaded: the selector is
// built first because the programs must know whether to report execs.
func (s *Selector) SetFilter(f Filter) { s.filter = f }

// NeedsRescan reports whether Sync must run periodically (ports and exe
// patterns pick up processes that start or listen later).
func (s *Selector) NeedsRescan() bool { return len(s.sel.Ports) > 0 || s.exe != nil }

// NeedsExecEvents reports whether new processes must be checked as they
// exec (selection by executable).
func (s *Selector) NeedsExecEvents() bool { return s.exe != nil }

// Sync scans /proc and marks every matching process traced. It is cheap
// enough to run every few seconds; pids already marked are skipped.
func (s *Selector) Sync() error {
	if s.sel.All() {
		return nil
	}
	want := map[int]bool{}
	for _, pid := range s.sel.PIDs {
		want[pid] = true
	}
	if len(s.sel.Ports) > 0 {
		pids, err := ListeningPIDs(s.proc, s.sel.Ports)
		if err != nil {
			return err
		}
		for _, p := range pids {
			want[p] = true
		}
	}
	if s.exe != nil {
		entries, err := os.ReadDir(s.proc)
		if err != nil {
			return fmt.Errorf("list processes: %w", err)
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err == nil && s.matchExe(pid) {
				want[pid] = true
			}
		}
	}
	for pid := range want {
		s.mark(pid)
	}
	return nil
}

// OnExec re-examines a process that just called execve.
func (s *Selector) OnExec(pid int) {
	if s.exe != nil && s.matchExe(pid) {
		s.mark(pid)
	}
}

// OnExit forgets a process.
func (s *Selector) OnExit(pid int) { delete(s.traced, pid) }

// Traced lists the processes marked so far.
func (s *Selector) Traced() []int {
	out := make([]int, 0, len(s.traced))
	for p := range s.traced {
		out = append(out, p)
	}
	return out
}

func (s *Selector) mark(pid int) {
	if pid == s.self || s.traced[pid] {
		return
	}
	if err := s.filter.SetPID(uint32(pid), true); err != nil {
		s.log.Warn("cannot trace process", "pid", pid, "err", err)
		return
	}
	s.traced[pid] = true
	s.log.Info("tracing process", "pid", pid, "exe", s.exePath(pid))
}

func (s *Selector) exePath(pid int) string {
	p, _ := os.Readlink(filepath.Join(s.proc, strconv.Itoa(pid), "exe"))
	return p
}

func (s *Selector) matchExe(pid int) bool {
	if pid == s.self {
		return false
	}
	if p := s.exePath(pid); p != "" && s.exe.MatchString(p) {
		return true
	}
	b, err := os.ReadFile(filepath.Join(s.proc, strconv.Itoa(pid), "cmdline"))
	if err != nil || len(b) == 0 {
		return false
	}
	return s.exe.MatchString(strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " "))
}
