// Command websrv is the traced application of weft's end-to-end tests.
//
//	-mode=nethttp  a net/http server: /hello, /sleep?ms=N[&status=S], /status/N, /big?bytes=N,
//	               /burn?ms=N (N ms of wall time in weftBurnCPUHotLoop, default 200),
//	               /burn?cpums=N (N ms of the handler thread's own CPU time),
//	               /work/... (200 after 0-10 ms, for the async-parents tests)
//	-background-burn  also burn CPU outside any request, in weftBackgroundBurn
//	-mode=sender   sends -requests requests to -downstream, each over a
//	               fresh connection or all over one (-downstream-keepalive),
//	               and prints its CPU time per request
//	-mode=thread   a thread-per-connection server whose /call handler calls
//	               -downstream over a raw socket on the same OS thread, the
//	               way a thread-per-request server does: a fresh connection
//	               per call, or one kept per thread (-downstream-keepalive)
package main

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	mrand "math/rand"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/weftdev/weft/test/testcert"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	mode := flag.String("mode", "nethttp", "nethttp, thread or mounter")
	downstream := flag.String("downstream", "", "host:port that /call calls (thread mode)")
	downPath := flag.String("downstream-path", "/hello", "path /call requests downstream")
	keepAlive := flag.Bool("downstream-keepalive", false, "keep one downstream connection per thread (thread mode) or for all requests (sender mode)")
	useTLS := flag.Bool("tls", false, "serve HTTPS with a self-signed certificate (nethttp mode)")
	certFile := flag.String("cert", "", "with -tls: the certificate (PEM) to serve, with -key; default: a new one")
	keyFile := flag.String("key", "", "with -tls: the certificate's key (PEM)")
	h2 := flag.Bool("h2", false, "offer HTTP/2 beside HTTP/1.1 (nethttp mode): by ALPN with -tls, else with prior knowledge (h2c)")
	bgBurn := flag.Bool("background-burn", false, "keep one goroutine burning CPU outside any request")
	sendN := flag.Int("requests", 20000, "requests to send (sender mode)")
	flag.Parse()
	if *mode == "sender" {
		send(*downstream, *downPath, *sendN, *keepAlive)
		return
	}
	if *bgBurn {
		go weftBackgroundBurn()
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	// The test reads the port from the first line.
	fmt.Println(ln.Addr().String())
	os.Stdout.Sync()
	if *useTLS {
		cert, err := serverCert(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		conf := &tls.Config{Certificates: []tls.Certificate{cert}}
		if *h2 {
			conf.NextProtos = []string{"h2", "http/1.1"}
		}
		ln = tls.NewListener(ln, conf)
	}
	switch *mode {
	case "nethttp":
		var protos http.Protocols
		protos.SetHTTP1(true)
		protos.SetHTTP2(*h2)
		protos.SetUnencryptedHTTP2(*h2 && !*useTLS)
		log.Fatal((&http.Server{Handler: handlers(), Protocols: &protos}).Serve(ln))
	case "thread":
		for {
			c, err := ln.Accept()
			if err != nil {
				log.Fatal(err)
			}
			go serveThread(c, *downstream, *downPath, *keepAlive)
		}
	case "mounter":
		serveMounter(ln, *downstream)
	default:
		log.Fatalf("unknown mode %q", *mode)
	}
}

func handlers() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	})
	mux.HandleFunc("/sleep", func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		if code, err := strconv.Atoi(r.URL.Query().Get("status")); err == nil && code >= 200 && code <= 599 {
			w.WriteHeader(code)
		}
		io.WriteString(w, "slept\n")
	})
	mux.HandleFunc("/status/{code}", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.PathValue("code"))
		if err != nil || code < 200 || code > 599 {
			code = 400
		}
		w.WriteHeader(code)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("bytes"))
		w.Header().Set("Content-Length", strconv.Itoa(n))
		buf := make([]byte, 32<<10)
		for n > 0 {
			k := min(n, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	mux.HandleFunc("/headers", func(w http.ResponseWriter, r *http.Request) {
		// Raw header lines, as received: net/http would merge repeats.
		fmt.Fprintf(w, "traceparent=%d %s\n", len(r.Header.Values("Traceparent")), strings.Join(r.Header.Values("Traceparent"), ","))
	})
	mux.HandleFunc("/burn", func(w http.ResponseWriter, r *http.Request) {
		if cpu, err := strconv.Atoi(r.URL.Query().Get("cpums")); err == nil && cpu > 0 {
			fmt.Fprintf(w, "burnt %x\n", weftBurnThreadCPU(time.Duration(cpu)*time.Millisecond))
			return
		}
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms <= 0 {
			ms = 200
		}
		fmt.Fprintf(w, "burnt %x\n", weftBurnCPUHotLoop(time.Now, time.Duration(ms)*time.Millisecond))
	})
	mux.HandleFunc("/work/", func(w http.ResponseWriter, r *http.Request) {
		// The backend of the async-parents tests: its callers hold many
		// requests at once while it works.
		time.Sleep(time.Duration(mrand.Intn(10001)) * time.Microsecond)
		io.WriteString(w, "worked\n")
	})
	mux.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		h := sha256.New()
		n, _ := io.Copy(h, r.Body)
		fmt.Fprintf(w, "%d %x\n", n, h.Sum(nil))
	})
	return mux
}

// serverCert is the certificate in certFile and keyFile, or a new
// self-signed one when none is named.
func serverCert(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" {
		return testcert.New()
	}
	return tls.LoadX509KeyPair(certFile, keyFile)
}

// serveThread keeps the connection's goroutine on one OS thread, so every
// read and write of a request, including the downstream call, carries the
// same thread id.
func serveThread(c net.Conn, downstream, downPath string, keepAlive bool) {
	runtime.LockOSThread()
	defer c.Close()
	var down *downConn
	if keepAlive {
		down = &downConn{addr: downstream}
		defer down.close()
	}
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		status, body := 200, "ok\n"
		if req.URL.Path == "/call" && downstream != "" {
			var code int
			var err error
			if down != nil {
				code, err = down.call(downPath)
			} else {
				code, err = call(downstream, downPath)
			}
			if err != nil {
				status, body = 502, err.Error()+"\n"
			} else {
				body = fmt.Sprintf("downstream said %d\n", code)
			}
		}
		resp := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Length: %d\r\nContent-Type: text/plain\r\n\r\n%s",
			status, http.StatusText(status), len(body), body)
		if _, err := io.WriteString(c, resp); err != nil {
			return
		}
		if req.Close {
			return
		}
	}
}

// call makes one HTTP/1.1 request over a fresh connection from the
// calling goroutine (net/http's client would write from another one).
func call(addr, path string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	code, _, err := exchange(c, bufio.NewReader(c), getRequest(addr, path, "Connection: close\r\n"))
	return code, err
}

// getRequest is a GET of path from the host of addr, with extra header
// lines.
func getRequest(addr, path, extra string) string {
	host := strings.Split(addr, ":")[0]
	return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: websrv\r\n%s\r\n", path, host, extra)
}

// exchange writes req in one write and reads the whole response: its
// status, and whether the server closes the connection after it.
func exchange(c net.Conn, br *bufio.Reader, req string) (code int, closing bool, err error) {
	if _, err := io.WriteString(c, req); err != nil {
		return 0, false, err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, false, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Close, nil
}

// downConn is a thread's kept-alive downstream connection, dialled on
// first use and again after an error.
type downConn struct {
	addr string
	c    net.Conn
	br   *bufio.Reader
}

func (d *downConn) call(path string) (int, error) {
	if d.c == nil {
		c, err := net.DialTimeout("tcp", d.addr, 5*time.Second)
		if err != nil {
			return 0, err
		}
		d.c, d.br = c, bufio.NewReader(c)
	}
	d.c.SetDeadline(time.Now().Add(10 * time.Second))
	code, closing, err := exchange(d.c, d.br, getRequest(d.addr, path, ""))
	if err != nil || closing {
		d.close()
	}
	return code, err
}

func (d *downConn) close() {
	if d.c != nil {
		d.c.Close()
		d.c = nil
	}
}

// weftBurnThreadCPU burns d of the thread's own CPU time, however busy the
// machine: the profiling tests count its samples, and an on-CPU sampler
// sees CPU time, not wall time.
func weftBurnThreadCPU(d time.Duration) uint64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return weftBurnCPUHotLoop(threadCPU, d)
}

func threadCPU() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		panic(err)
	}
	return time.Unix(ts.Unix())
}

// weftBurnCPUHotLoop keeps the calling goroutine on a CPU until now has
// advanced by d. The profiling tests look for its name in the request's
// flame graph; the result goes into the response so the loop cannot be
// optimised away.
//
//go:noinline
func weftBurnCPUHotLoop(now func() time.Time, d time.Duration) uint64 {
	deadline := now().Add(d)
	h := uint64(14695981039346656037) // FNV-1a offset basis
	for now().Before(deadline) {
		for i := range 200000 {
			h = (h ^ uint64(i)) * 1099511628211
		}
	}
	return h
}

// burnSink keeps weftBackgroundBurn's result alive.
var burnSink uint64

// weftBackgroundBurn burns CPU forever, in no request: about a third of a
// CPU, in 10 ms slices.
func weftBackgroundBurn() {
	for {
		burnSink += weftBackgroundBurnSlice(10 * time.Millisecond)
		time.Sleep(20 * time.Millisecond)
	}
}

//go:noinline
func weftBackgroundBurnSlice(d time.Duration) uint64 {
	deadline := time.Now().Add(d)
	h := uint64(1)
	for time.Now().Before(deadline) {
		for i := range 20000 {
			h = h*31 + uint64(i)
		}
	}
	return h
}
