package selector

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weftdev/weft/pkg/config"
)

type recordFilter map[uint32]bool

func (r recordFilter) SetPID(pid uint32, traced bool) error { r[pid] = traced; return nil }
func (r recordFilter) SetPIDByCgroup(pid uint32) error      { r[pid] = true; return nil }

func thisSystem() System { return System{Proc: "/proc", Self: os.Getpid()} }

func TestListeningPIDsFindsThisProcess(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	pids, err := ListeningPIDs("/proc", []int{port})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(pids, os.Getpid()) {
		t.Fatalf("pid %d not among listeners of %d: %v", os.Getpid(), port, pids)
	}
}

func TestSelectByExeAndPID(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	f := recordFilter{}
	s, err := New(config.Select{Exe: `/sleep$`, PIDs: []int{1}}, thisSystem(), f)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if !f[uint32(cmd.Process.Pid)] {
		t.Errorf("sleep (pid %d) not selected: %v", cmd.Process.Pid, f)
	}
	if !f[1] {
		t.Error("explicit pid 1 not selected")
	}
	if f[uint32(os.Getpid())] {
		t.Error("selected itself")
	}
}

// A selected shell's child, running before the selection, is traced too.
func TestSelectPIDTakesRunningDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var kids []int
	for deadline := time.Now().Add(5 * time.Second); len(kids) < 2 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		tree, err := parents("/proc")
		if err != nil {
			t.Fatal(err)
		}
		kids = descendants(tree, cmd.Process.Pid)
	}
	if len(kids) != 2 {
		t.Fatalf("shell %d has children %v, want 2", cmd.Process.Pid, kids)
	}
	defer func() {
		for _, k := range kids {
			syscallKill(k)
		}
	}()
	f := recordFilter{}
	s, err := New(config.Select{PIDs: []int{cmd.Process.Pid}}, thisSystem(), f)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(kids, cmd.Process.Pid) {
		if !f[uint32(p)] {
			t.Errorf("pid %d not traced: %v", p, f)
		}
	}
	for _, p := range s.Processes() {
		want := "pid=" + strconv.Itoa(cmd.Process.Pid)
		if p.PID != cmd.Process.Pid {
			want += " (descendant)"
		}
		if p.Selector != want {
			t.Errorf("pid %d: selector %q, want %q", p.PID, p.Selector, want)
		}
	}
}

func TestBadSelectionsFailAtStart(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	notCgroup := t.TempDir()
	for name, c := range map[string]struct {
		sel  config.Select
		want string
	}{
		"gone pid":      {config.Select{PIDs: []int{dead.Process.Pid}}, "no such process"},
		"not a pid":     {config.Select{PIDs: []int{-3}}, "not a process id"},
		"not a cgroup":  {config.Select{Cgroups: []string{notCgroup}}, "not a cgroup v2 directory"},
		"no such path":  {config.Select{Cgroups: []string{notCgroup + "/nope"}}, "no such file"},
		"no container":  {config.Select{Containers: []string{"0123456789abcdef0123"}}, "no running process is in a cgroup named after it"},
		"short id":      {config.Select{Containers: []string{"abc"}}, "at least 12 characters"},
		"no cgroup2 fs": {config.Select{Cgroups: []string{"/x"}}, "needs a cgroup v2 mount"},
	} {
		t.Run(name, func(t *testing.T) {
			sys := thisSystem()
			if name != "no cgroup2 fs" {
				sys.CgroupRoot = "/sys/fs/cgroup"
			}
			_, err := New(c.sel, sys, recordFilter{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one saying %q", err, c.want)
			}
		})
	}
}

func syscallKill(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Kill()
	}
}
