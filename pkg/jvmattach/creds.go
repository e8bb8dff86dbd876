package jvmattach

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// identity is an effective uid/gid pair.
type identity struct{ uid, gid int }

func self() identity { return identity{os.Geteuid(), os.Getegid()} }

// asIdentity runs fn on a locked OS thread whose effective uid and gid are
// switched to id. Two things need the JVM's identity rather than weft's
// root: HotSpot checks the SO_PEERCRED of a connection, which the kernel
// records at connect time from the connecting thread; and a filesystem
// mounted in the JVM's user namespace refuses files created by a uid it
// cannot map (EOVERFLOW). Only that thread changes: syscall.Setuid would
// switch every thread of weft. fn must not start goroutines that need the
// identity.
func asIdentity(id identity, fn func() error) error {
	me := self()
	if id == me {
		return fn()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored, err := runSwitched(id, me, fn)
		if restored {
			runtime.UnlockOSThread()
		}
		// Otherwise the goroutine exits still locked and the runtime ends the
		// thread, so its foreign credentials never run other goroutines.
		done <- err
	}()
	return <-done
}

// runSwitched must run on a locked thread. restored reports whether the
// thread got its own credentials back.
func runSwitched(id, me identity, fn func() error) (restored bool, err error) {
	// The gid first, while the thread is still root and may change it; back
	// in the reverse order.
	if err := setThreadEGID(id.gid); err != nil {
		return true, fmt.Errorf("switch thread to gid %d: %w", id.gid, err)
	}
	if err := setThreadEUID(id.uid); err != nil {
		if rerr := setThreadEGID(me.gid); rerr != nil {
			return false, fmt.Errorf("switch thread to uid %d: %w (and restore gid: %v)", id.uid, err, rerr)
		}
		return true, fmt.Errorf("switch thread to uid %d: %w", id.uid, err)
	}
	err = fn()
	uerr := setThreadEUID(me.uid)
	var gerr error
	if uerr == nil {
		gerr = setThreadEGID(me.gid)
	}
	if uerr != nil || gerr != nil {
		return false, errors.Join(err, fmt.Errorf("restore thread credentials: %w", errors.Join(uerr, gerr)))
	}
	return true, err
}

// setThreadEUID and setThreadEGID change the effective id of the calling
// thread only: the raw system call, not glibc's or Go's wrapper, both of
// which broadcast the change to every thread. Real and saved ids stay, so
// the thread can switch back; the kernel drops the thread's effective
// capabilities while its euid is not 0 and gives them back after.
func setThreadEUID(uid int) error {
	const keep = ^uintptr(0) // -1: leave unchanged
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
		return e
	}
	return nil
}

func setThreadEGID(gid int) error {
	const keep = ^uintptr(0)
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(gid), keep); e != 0 {
		return e
	}
	return nil
}

// dialAs connects a Unix stream socket to path as id. A connect that is not
// accepted right away (no listener, full backlog) fails instead of
// blocking, so callers can retry.
func dialAs(path string, id identity) (net.Conn, error) {
	var c net.Conn
	err := asIdentity(id, func() error {
		var err error
		c, err = dialUnix(path)
		return err
	})
	if err != nil {
		if c != nil {
			c.Close()
		}
		return nil, err
	}
	return c, nil
}

// dialUnix connects on the calling thread, which dialAs needs; the net
// package would do the same today, but does not promise it.
func dialUnix(path string) (net.Conn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("connect: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close() // FileConn has its own duplicate
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("wrap socket: %w", err)
	}
	return c, nil
}
