// Command rawclient sends HTTP in shapes that stress traceparent injection,
// for weft's integrity tests. It waits for a line on stdin before it
// connects (so weft can be told its pid first), runs one scenario, and
// prints each response body it got, one per line.
//
//	-scenario split     request line written in three pieces
//	-scenario pipeline  three requests in one write
//	-scenario hastp     a request that already carries traceparent
//	-scenario tpsplit   the same, its request line and its headers in two writes
//	-scenario tls       an HTTPS GET (bytes weft must not touch)
//	-scenario upload    POST -bytes random bytes, prints their SHA-256 and the server's count
//	-scenario download  GET /big?bytes=N, prints the SHA-256 of the body
package main

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	target := flag.String("target", "", "host:port")
	scenario := flag.String("scenario", "", "split, pipeline, hastp, hastpcase, tpsplit, segments, tls, upload, download")
	size := flag.Int("bytes", 1<<20, "body size for upload/download")
	flag.Parse()
	bufio.NewReader(os.Stdin).ReadString('\n')

	switch *scenario {
	case "split":
		raw(*target, []string{"GET /head", "ers HTTP/1.1\r\nHo", "st: x\r\nConnection: close\r\n\r\n"}, 1)
	case "pipeline":
		one := "GET /headers HTTP/1.1\r\nHost: x\r\n\r\n"
		raw(*target, []string{one + one + strings.Replace(one, "\r\n\r\n", "\r\nConnection: close\r\n\r\n", 1)}, 3)
	case "hastp":
		raw(*target, []string{"GET /headers HTTP/1.1\r\nHost: x\r\ntraceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nConnection: close\r\n\r\n"}, 1)
	case "hastpcase": // header names are case-insensitive
		raw(*target, []string{"GET /headers HTTP/1.1\r\nHost: x\r\nAccept: */*\r\nTraceParent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nConnection: close\r\n\r\n"}, 1)
	case "tpsplit":
		raw(*target, []string{"GET /headers HTTP/1.1\r\n", "traceparent: 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01\r\nHost: x\r\nConnection: close\r\n\r\n"}, 1)
	case "segments": // one write: how many TCP segments carried it
		segments(*target, "GET /headers HTTP/1.1\r\nHost: x\r\nUser-Agent: rawclient\r\nConnection: close\r\n\r\n")
	case "tls":
		c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := c.Get("https://" + *target + "/headers")
		if err != nil {
			log.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		fmt.Print(string(b))
	case "upload":
		body := make([]byte, *size)
		r := rand.NewChaCha8([32]byte{1})
		r.Read(body)
		sum := sha256.Sum256(body)
		resp, err := http.Post("http://"+*target+"/upload", "application/octet-stream", strings.NewReader(string(body)))
		if err != nil {
			log.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("sent %d %s\nserver %s", len(body), hex.EncodeToString(sum[:]), b)
	case "download":
		start := time.Now()
		resp, err := http.Get("http://" + *target + "/big?bytes=" + strconv.Itoa(*size))
		if err != nil {
			log.Fatal(err)
		}
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("got %d %s %v\n", n, hex.EncodeToString(h.Sum(nil)), time.Since(start))
	default:
		log.Fatalf("unknown scenario %q", *scenario)
	}
}

// raw writes the pieces one write each (with a pause so they stay
// separate sends) and prints the body of each of n responses.
func raw(target string, pieces []string, n int) {
	c, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	for _, p := range pieces {
		if _, err := io.WriteString(c, p); err != nil {
			log.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	br := bufio.NewReader(c)
	for range n {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			log.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s", resp.StatusCode, b)
	}
}

// segments writes req in one write, reads the response and prints its
// status and body, then the data segments the connection sent
// (TCP_INFO's tcpi_data_segs_out).
func segments(target, req string) {
	c, err := net.DialTimeout("tcp", target, 5*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		log.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		log.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		log.Fatal(err)
	}
	var info *unix.TCPInfo
	var ierr error
	if err := raw.Control(func(fd uintptr) { info, ierr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO) }); err != nil || ierr != nil {
		log.Fatal(err, ierr)
	}
	fmt.Printf("%d %s", resp.StatusCode, b)
	fmt.Printf("segs=%d\n", info.Data_segs_out)
}
