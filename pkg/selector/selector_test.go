package selector

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/weftdev/weft/pkg/config"
)

type recordFilter map[uint32]bool

func (r recordFilter) SetPID(pid uint32, traced bool) error { r[pid] = traced; return nil }

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
	s, err := New(config.Select{Exe: `/sleep$`, PIDs: []int{1}}, "/proc", os.Getpid(), f)
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
