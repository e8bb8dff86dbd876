package main

import (
	"bufio"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
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
	host := strings.Split(target, ":")[0]
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: websrv\r\nAccept: */*\r\n\r\n", path, host)
	var before, after syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	for range n {
		if c == nil {
			dial()
		}
		if _, err := io.WriteString(c, req); err != nil {
			log.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			log.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
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
