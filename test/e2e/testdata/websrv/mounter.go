package main

import (
	"bufio"
	"fmt"
	"log"
	"net"
	"net/http"
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// The JVM agent's mount protocol, spoken by hand with packets built byte for
// byte as OBI's agent builds them: ioctl(0, 0x0b10b1, [op, u64 LE]).
const (
	mountCmd   = 0x0b10b1
	opMount    = 4
	opUnmount  = 5
	opSlot     = 0x57 // weft's extension: register a slot to mount by writing
	firstLogID = 1000
)

// noteFD is an AF_UNIX datagram socket never connected: a note sent on it
// (weft's agent_note: "weft", op, 3 zero bytes, u64 LE) fails with
// ENOTCONN after the kernel's sock_send_length tracepoint saw it, which is
// how weft's socket-only tracepoint path hears of a slot registration.
var noteFD = func() int {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		log.Fatal(err)
	}
	return fd
}()

func mountNote(op byte, arg uint64) {
	var note [16]byte
	copy(note[:4], "weft")
	note[4] = op
	for i := 0; i < 8; i++ {
		note[8+i] = byte(arg >> (8 * i))
	}
	syscall.Syscall6(syscall.SYS_SENDTO, uintptr(noteFD), uintptr(unsafe.Pointer(&note[0])), uintptr(len(note)), syscall.MSG_DONTWAIT, 0, 0)
	runtime.KeepAlive(&note)
}

func mountIoctl(op byte, arg uint64) {
	var pkt [9]byte
	pkt[0] = op
	for i := 0; i < 8; i++ {
		pkt[1+i] = byte(arg >> (8 * i))
	}
	// Fails with ENOTTY or EBADF: the kernel side only observes the call.
	syscall.Syscall(syscall.SYS_IOCTL, 0, mountCmd, uintptr(unsafe.Pointer(&pkt[0])))
	runtime.KeepAlive(&pkt)
}

type mountJob struct {
	via   string
	id    uint64
	reply chan string
}

// serveMounter is -mode=mounter: the accepting thread mounts a logical id
// before it reads each request and hands the request to one worker thread,
// which nothing but a mount ties to the request. GET /job?via=X:
//
//	via=ioctl  worker mounts with op 4, calls downstream /first, unmounts
//	           with op 5, calls downstream /second
//	via=slot   the same through a registered slot (op 0x57): mounting and
//	           unmounting are memory writes
//	via=none   worker calls downstream /first without mounting
func serveMounter(ln net.Listener, downstream string) {
	jobs := make(chan mountJob)
	go mountWorker(jobs, downstream)
	runtime.LockOSThread()
	id := uint64(firstLogID)
	for {
		c, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		id++
		mountIoctl(opMount, id)
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err == nil {
			j := mountJob{via: req.URL.Query().Get("via"), id: id, reply: make(chan string)}
			jobs <- j
			body := <-j.reply + "\n"
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
		}
		c.Close()
		mountIoctl(opUnmount, 0)
	}
}

func mountWorker(jobs <-chan mountJob, downstream string) {
	runtime.LockOSThread()
	var slot *uint64
	status := func(path string) string {
		code, err := call(downstream, path)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%s %d", path, code)
	}
	for j := range jobs {
		switch j.via {
		case "ioctl":
			mountIoctl(opMount, j.id)
			first := status("/first")
			mountIoctl(opUnmount, 0)
			j.reply <- first + " | " + status("/second")
		case "slot":
			if slot == nil {
				slot = new(uint64) // heap memory: Go's collector does not move it
				mountIoctl(opSlot, uint64(uintptr(unsafe.Pointer(slot))))
				mountNote(opSlot, uint64(uintptr(unsafe.Pointer(slot))))
			}
			atomic.StoreUint64(slot, j.id)
			first := status("/first")
			atomic.StoreUint64(slot, 0)
			j.reply <- first + " | " + status("/second")
		default:
			j.reply <- status("/first")
		}
	}
}
