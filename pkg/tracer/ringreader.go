package tracer

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"
)

// ringReader reads a BPF ring buffer, waiting for records in Go's network
// poller rather than in ringbuf.Reader's blocking epoll_wait.
//
// A goroutine blocked in a system call keeps its P out of the idle set, so
// the runtime's sysmon thread never sleeps deeply; it retakes that P after
// 10 ms and each retake sends it back to polling every 20 µs. With the
// events ring drained every 50 ms that was about a fifth of weft's CPU at
// 3000 requests per second. Parked in the poller, the reader lets every P
// go idle between drains, and sysmon with them.
//
// The ringbuf.Reader is only ever asked not to wait (its deadline is in
// the past); the wait is on a non-blocking duplicate of the map's fd,
// which the kernel wakes as it wakes any poller of the ring.
type ringReader struct {
	// mu keeps Close from unmapping the ring while a reader looks at it
	// (ringbuf.Reader.AvailableBytes reads the mapped pages unlocked).
	mu       sync.Mutex
	closed   bool
	r        *ringbuf.Reader
	wake     *os.File
	raw      syscall.RawConn
	deadline atomic.Int64 // unix ns; 0: none
}

func newRingReader(m *ebpf.Map) (*ringReader, error) {
	r, err := ringbuf.NewReader(m)
	if err != nil {
		return nil, err
	}
	r.SetDeadline(time.Unix(0, 1))
	fd, err := unix.FcntlInt(uintptr(m.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("dup ring buffer fd: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		r.Close()
		return nil, fmt.Errorf("ring buffer fd non-blocking: %w", err)
	}
	wake := os.NewFile(uintptr(fd), m.String())
	raw, err := wake.SyscallConn()
	if err == nil {
		// Fails unless the fd is in the poller, where Read must wait.
		err = wake.SetReadDeadline(time.Time{})
	}
	if err != nil {
		wake.Close()
		r.Close()
		return nil, fmt.Errorf("ring buffer fd in the poller: %w", err)
	}
	return &ringReader{r: r, wake: wake, raw: raw}, nil
}

// SetDeadline makes ReadInto return os.ErrDeadlineExceeded at d when no
// record came; a zero d waits without end. It applies from the next wait.
func (rr *ringReader) SetDeadline(d time.Time) {
	if d.IsZero() {
		rr.deadline.Store(0)
		return
	}
	rr.deadline.Store(max(d.UnixNano(), 1))
}

// ReadInto reads the next record into rec. It returns os.ErrClosed after
// Close and os.ErrDeadlineExceeded when the deadline passed with the ring
// empty.
func (rr *ringReader) ReadInto(rec *ringbuf.Record) error {
	for {
		if done, err := rr.readReady(rec); done {
			return err
		}
		dl := rr.deadline.Load()
		var until time.Time
		if dl != 0 {
			until = time.Unix(0, dl)
			if !time.Now().Before(until) {
				return os.ErrDeadlineExceeded
			}
		}
		if err := rr.wait(until); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			if rr.isClosed() {
				return os.ErrClosed
			}
			return fmt.Errorf("wait for ring buffer: %w", err)
		}
	}
}

// readReady reads a record if the ring holds one. ringbuf.Reader polls (a
// system call) whenever it finds the ring empty; asked only when the ring
// holds data, it reads straight from the mapped pages. A system call's
// return would also wake sysmon from its deep sleep into 20 µs polling.
func (rr *ringReader) readReady(rec *ringbuf.Record) (bool, error) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.closed {
		return true, os.ErrClosed
	}
	if rr.r.AvailableBytes() == 0 {
		return false, nil
	}
	err := rr.r.ReadInto(rec)
	return !errors.Is(err, os.ErrDeadlineExceeded), err
}

func (rr *ringReader) isClosed() bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.closed
}

// wait parks until the ring holds data or until (zero: no limit). The
// check runs after the poller's readiness was reset, so a wakeup between
// the caller's empty read and the park is not lost.
func (rr *ringReader) wait(until time.Time) error {
	if err := rr.wake.SetReadDeadline(until); err != nil {
		return err
	}
	return rr.raw.Read(func(uintptr) bool {
		rr.mu.Lock()
		defer rr.mu.Unlock()
		return rr.closed || rr.r.AvailableBytes() > 0
	})
}

// Close interrupts a waiting ReadInto and releases the ring.
func (rr *ringReader) Close() error {
	rr.mu.Lock()
	rr.closed = true
	rr.mu.Unlock()
	// Closing the file first wakes a reader parked in the poller.
	werr := rr.wake.Close()
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return errors.Join(rr.r.Close(), werr)
}
