package main

import (
	"bufio"
	"bytes"
	"fmt"
	"log"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"
)

// send is -mode=sender: once a line arrives on stdin (so that weft can be
// started on its pid first), it sends n GET requests one after another
// from one OS thread, over one kept-alive connection or a fresh one each,
// and prints the CPU time the process spent per request, in µs (user,
// system). Injection runs in the sender's send call, and the sockets'
// set-up and tear-down in its connect and close, so their cost is in
// these figures.
//
// The socket calls are direct system calls on a non-blocking socket, the
// way most clients (Go, curl, Node) use it, waiting in poll(2) without
// telling Go's scheduler: the network poller and its hand-off of a blocked
// thread's processor wake other threads at every request, which moved the
// figures by several µs from run to run.
func send(target, path string, n int, keepAlive bool) {
	bufio.NewReader(os.Stdin).ReadString('\n')
	runtime.LockOSThread()
	ap, err := netip.ParseAddrPort(target)
	if err != nil || !ap.Addr().Is4() {
		log.Fatalf("sender: %q is not an IPv4 host:port", target)
	}
	sa := &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}
	req := []byte(getRequest(target, path, "Accept: */*\r\n"))
	buf := make([]byte, 64<<10)
	fd := -1
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for range n {
		if fd < 0 {
			fd = dial(sa)
		}
		if err := exchangeRaw(fd, req, buf); err != nil {
			log.Fatalf("sender: %v", err)
		}
		if !keepAlive {
			syscall.Close(fd)
			fd = -1
		}
	}
	if fd >= 0 {
		syscall.Close(fd)
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	us := func(a, b syscall.Timeval) float64 {
		return float64((b.Sec-a.Sec)*1e6+(b.Usec-a.Usec)) / float64(n)
	}
	fmt.Printf("%.3f %.3f\n", us(before.Utime, after.Utime), us(before.Stime, after.Stime))
}

// dial connects a non-blocking TCP socket with Nagle off, as Go's own
// connections are (weft leaves out connections that connect blocking).
func dial(sa *syscall.SockaddrInet4) int {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC|syscall.SOCK_NONBLOCK, 0)
	if err != nil {
		log.Fatalf("sender: socket: %v", err)
	}
	if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
		log.Fatalf("sender: TCP_NODELAY: %v", err)
	}
	if err := syscall.Connect(fd, sa); err != nil && err != syscall.EINPROGRESS {
		log.Fatalf("sender: connect: %v", err)
	}
	if err := waitReady(fd, pollOut); err != nil {
		log.Fatalf("sender: connect: %v", err)
	}
	if soErr, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ERROR); err != nil || soErr != 0 {
		log.Fatalf("sender: connect: %v %v", err, syscall.Errno(soErr))
	}
	return fd
}

// exchangeRaw writes req in one write and reads one whole response (a
// status line and headers with Content-Length, then the body).
func exchangeRaw(fd int, req, buf []byte) error {
	if _, err := rawIO(syscall.SYS_WRITE, fd, req); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	got := 0
	for want := -1; want < 0 || got < want; {
		if got == len(buf) {
			return fmt.Errorf("response longer than %d bytes", len(buf))
		}
		m, err := rawIO(syscall.SYS_READ, fd, buf[got:])
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if m == 0 {
			return fmt.Errorf("connection closed after %d bytes of response", got)
		}
		got += m
		if want < 0 {
			if want, err = responseLength(buf[:got]); err != nil {
				return err
			}
		}
	}
	if !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("response %q", buf[:min(got, 40)])
	}
	return nil
}

// responseLength is the length of the whole response once its head is in
// b, or -1 while it is not.
func responseLength(b []byte) (int, error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		return -1, nil
	}
	for _, line := range bytes.Split(b[:end], []byte("\r\n")) {
		name, value, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(name, []byte("Content-Length")) {
			n, err := strconv.Atoi(string(bytes.TrimSpace(value)))
			if err != nil {
				return 0, fmt.Errorf("Content-Length %q: %w", value, err)
			}
			return end + 4 + n, nil
		}
	}
	return 0, fmt.Errorf("response without Content-Length: %q", b[:end])
}

// rawIO is read(2) or write(2), waiting in poll(2) while the socket is
// not ready, all without telling Go's scheduler, which otherwise hands the
// thread's processor to another thread while it waits.
func rawIO(call uintptr, fd int, b []byte) (int, error) {
	events := int16(pollIn)
	if call == syscall.SYS_WRITE {
		events = pollOut
	}
	for {
		r, _, errno := syscall.RawSyscall(call, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		switch errno {
		case 0:
			return int(r), nil
		case syscall.EINTR:
		case syscall.EAGAIN:
			if err := waitReady(fd, events); err != nil {
				return 0, err
			}
		default:
			return 0, errno
		}
	}
}

// waitReady waits in poll(2) until fd is ready for events (or a signal
// comes: the caller tries again).
func waitReady(fd int, events int16) error {
	pfd := pollFd{fd: int32(fd), events: events}
	_, _, errno := syscall.RawSyscall(syscall.SYS_POLL, uintptr(unsafe.Pointer(&pfd)), 1, ^uintptr(0))
	if errno != 0 && errno != syscall.EINTR {
		return fmt.Errorf("poll: %w", errno)
	}
	return nil
}

// pollFd is struct pollfd.
type pollFd struct {
	fd      int32
	events  int16
	revents int16
}

const (
	pollIn  = 0x1
	pollOut = 0x4
)
