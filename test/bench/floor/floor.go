package floor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/weftdev/weft/pkg/kernel"
)

// Sockmap is the do-nothing sockmap attached to a cgroup of its own: the
// client connections of the processes moved into it send through the
// kernel's sockmap path and an sk_msg program that passes every byte.
type Sockmap struct {
	objs   floorObjects
	ops    link.Link
	msg    *link.RawAttachProgramOptions
	cgroup string
}

// Attach creates the cgroup name under the cgroup v2 mount and attaches
// the programs to it.
func Attach(name string) (*Sockmap, error) {
	root, err := kernel.FindMount("cgroup2")
	if err != nil {
		return nil, fmt.Errorf("floor: %w", err)
	}
	s := &Sockmap{cgroup: filepath.Join(root, name)}
	if err := os.Mkdir(s.cgroup, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("floor: create cgroup: %w", err)
	}
	if err := loadFloorObjects(&s.objs, nil); err != nil {
		s.Close()
		return nil, fmt.Errorf("floor: load: %w", err)
	}
	opts := link.RawAttachProgramOptions{Target: s.objs.FloorSocks.FD(), Program: s.objs.FloorPass, Attach: ebpf.AttachSkMsgVerdict}
	if err := link.RawAttachProgram(opts); err != nil {
		s.Close()
		return nil, fmt.Errorf("floor: attach sk_msg: %w", err)
	}
	s.msg = &opts
	s.ops, err = link.AttachCgroup(link.CgroupOptions{Path: s.cgroup, Attach: ebpf.AttachCGroupSockOps, Program: s.objs.FloorSockops})
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("floor: attach sockops: %w", err)
	}
	return s, nil
}

// Enter moves process pid into the cgroup.
func (s *Sockmap) Enter(pid int) error {
	err := os.WriteFile(filepath.Join(s.cgroup, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
	if err != nil {
		return fmt.Errorf("floor: move %d into %s: %w", pid, s.cgroup, err)
	}
	return nil
}

// Close detaches the programs and removes the cgroup (once its processes
// have exited).
func (s *Sockmap) Close() error {
	var errs []error
	if s.ops != nil {
		errs = append(errs, s.ops.Close())
	}
	if s.msg != nil {
		errs = append(errs, link.RawDetachProgram(link.RawDetachProgramOptions(*s.msg)))
	}
	errs = append(errs, s.objs.Close())
	if err := os.Remove(s.cgroup); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("floor: remove cgroup: %w", err))
	}
	return errors.Join(errs...)
}
