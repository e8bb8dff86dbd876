package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// child is a process the demo started, in a process group of its own: the
// terminal's Ctrl-C reaches only the runner, which then stops the children
// in order (weft before the services it traces, Jaeger last), and a stop
// reaches whatever a child may have started in turn.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	stopSig syscall.Signal
	done    chan struct{}
	waitErr error // set before done is closed
}

// startChild starts cmd with its output in logPath.
func startChild(name, logPath string, stopSig syscall.Signal, cmd *exec.Cmd) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("start %s: log file: %w", name, err)
	}
	defer f.Close() // the child holds its own copy of the descriptor
	cmd.Stdout, cmd.Stderr = f, f
	// Pdeathsig covers the runner itself dying without its clean-up (kill -9,
	// a second Ctrl-C): the children go with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, stopSig: stopSig, done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// exitError says how the child ended, with the end of its log.
func (c *child) exitError() error {
	return fmt.Errorf("%s (pid %d) exited: %v; the end of %s:\n%s", c.name, c.pid(), c.waitErr, c.logPath, c.tail(15))
}

// stop signals the child's process group and waits; after grace it kills
// the group. It then makes sure no member of the group is left.
func (c *child) stop(grace time.Duration) error {
	pgid := c.pid()
	if !c.exited() {
		if err := syscall.Kill(-pgid, c.stopSig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("stop %s: %w", c.name, err)
		}
		select {
		case <-c.done:
		case <-time.After(grace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			select {
			case <-c.done:
			case <-time.After(5 * time.Second):
				return fmt.Errorf("stop %s (pid %d): still running after SIGKILL", c.name, pgid)
			}
		}
	}
	// The leader is gone; members it may have forked would keep the group.
	if err := syscall.Kill(-pgid, 0); err == nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		deadline := time.Now().Add(5 * time.Second)
		for syscall.Kill(-pgid, 0) == nil {
			if time.Now().After(deadline) {
				return fmt.Errorf("stop %s: process group %d survives SIGKILL", c.name, pgid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// tail returns the last n lines of the child's log.
func (c *child) tail(n int) string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "  " + strings.Join(lines, "\n  ")
}

// logContains reports whether the child's log holds s.
func (c *child) logContains(s string) bool {
	b, err := os.ReadFile(c.logPath)
	return err == nil && strings.Contains(string(b), s)
}
