package main

import (
	"bufio"
	"fmt"
	"log"
	"net"
	"os"
	"runtime"
	"syscall"
	"time"
)

// send is -mode=sender: once a line arrives on stdin (so that weft can be
// started on its pid first), it sends n GET requests one after another
// from one OS thread, over one kept-alive connection or a fresh one each,
// and prints the CPU time the process spent per request, in µs (user,
// system). Injection runs in the sender's send call, and the sockets'
// set-up and tear-down in its connect and close, so their cost is in
// these figures.
func send(target, path string, n int, keepAlive bool) {
	bufio.NewReader(os.Stdin).ReadString('\n')
	runtime.LockOSThread()
	var c net.Conn
	var br *bufio.Reader
	dial := func() {
		var err error
		if c, err = net.DialTimeout("tcp", target, 5*time.Second); err != nil {
			log.Fatal(err)
		}
		br = bufio.NewReader(c)
	}
	req := getRequest(target, path, "Accept: */*\r\n")
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for range n {
		if c == nil {
			dial()
		}
		if _, _, err := exchange(c, br, req); err != nil {
			log.Fatal(err)
		}
		if !keepAlive {
			c.Close()
			c = nil
		}
	}
	if c != nil {
		c.Close()
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	us := func(a, b syscall.Timeval) float64 {
		return float64((b.Sec-a.Sec)*1e6+(b.Usec-a.Usec)) / float64(n)
	}
	fmt.Printf("%.3f %.3f\n", us(before.Utime, after.Utime), us(before.Stime, after.Stime))
}
