// h2app is the HTTP/2, HTTPS and gRPC test program of the end-to-end
// tests: a prior-knowledge h2c server and client (Go's net/http), an
// HTTPS server and client (crypto/tls; HTTP/1.1 or HTTP/2 by ALPN), a
// gRPC server and client (grpc-go) of a small service declared by hand,
// a front service whose requests call a backend over HTTP/2 (or, serving
// HTTPS, over a plain socket of the handler's own goroutine), and an HTTPS
// client whose writes begin at every stack depth.
//
// Servers print their address on the first line. Clients wait for a line
// on stdin before they connect, so that a test can start weft on their
// pid first, then check every response's body byte for byte and exit
// non-zero on any mismatch.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/h2c"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/weftdev/weft/test/testcert"
)

func main() {
	mode := flag.String("mode", "", "h2c-server, h2c-upgrade-server, h2c-client, h2-traced-client, steady, https-server, https-client, grpc-server, grpc-client, grpc-traced-client, grpc-load, h2-load, h2-front, grpc-front, raw-front or tls-deep-client")
	addr := flag.String("addr", "", "server address (clients; h2-front, grpc-front: its backend)")
	n := flag.Int("n", 100, "requests (clients)")
	h1 := flag.Bool("http1", false, "https-client, steady: HTTP/1.1 only (else HTTP/2)")
	useTLS := flag.Bool("tls", false, "grpc-server, grpc-client, h2-traced-client, h2-front, grpc-front, steady: over TLS; raw-front: serving HTTPS/1.1")
	runFor := flag.Duration("for", 10*time.Second, "steady: how long to send at most (a line on stdin stops it)")
	paths := flag.Int("paths", 500, "steady: how many paths request numbers cycle through")
	noKeepAlive := flag.Bool("no-keepalive", false, "steady -http1: a connection per request")
	noTraceparent := flag.Bool("no-traceparent", false, "h2-traced-client, grpc-traced-client: send no traceparent")
	atOnce := flag.Int("at-once", 32, "h2-traced-client: requests in flight at once")
	maxStreams := flag.Uint("max-streams", 0, "h2c-upgrade-server: the streams a connection may have open at once (0: x/net's default)")
	certOut := flag.String("cert-out", "", "grpc-server -tls: write the server's certificate (PEM) there, for clients to trust")
	callPath := flag.String("call-path", "/work/", "h2-front: the path its calls of the backend begin with (/req/ has an h2app server call its own backend)")
	flag.StringVar(&workBackend, "backend", "", "grpc-server, h2c-server, h2c-upgrade-server, https-server: the HTTP/1.1 server (host:port) each Call<n> or /req/<n> calls, GET /work/<n>, before it answers")
	flag.Parse()
	var err error
	switch *mode {
	case "h2c-server":
		err = h2cServer(false, 0)
	case "h2c-upgrade-server":
		err = h2cServer(true, uint32(*maxStreams))
	case "h2c-client":
		waitGo()
		err = h2cClient(*addr, *n)
	case "h2-traced-client":
		waitGo()
		err = h2TracedClient(*addr, *n, *atOnce, *useTLS, *noTraceparent)
	case "steady":
		waitGo()
		err = steady(*addr, *runFor, *h1, *noKeepAlive, *useTLS, *paths)
	case "https-server":
		err = httpsServer()
	case "https-client":
		waitGo()
		err = httpsClient(*addr, *n, *h1)
	case "grpc-server":
		err = grpcServer(*useTLS, *certOut)
	case "grpc-client":
		waitGo()
		err = grpcClient(*addr, *n, *useTLS)
	case "grpc-traced-client":
		waitGo()
		err = grpcTracedClient(*addr, *n, *useTLS, *noTraceparent)
	case "grpc-load":
		err = load(*addr, grpcCall)
	case "h2-load":
		err = load(*addr, h2Call)
	case "h2-front":
		err = h2Front(*addr, *callPath, *useTLS)
	case "grpc-front":
		err = grpcFront(*addr, *useTLS)
	case "raw-front":
		err = rawFront(*addr, *useTLS)
	case "tls-deep-client":
		waitGo()
		err = tlsDeepClient(*addr, *n)
	default:
		err = fmt.Errorf("unknown -mode %q", *mode)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// waitGo reports the pid and waits for the test's go-ahead.
func waitGo() {
	fmt.Println(os.Getpid())
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		log.Fatalf("no go-ahead: %v", err)
	}
}

// body is what the server answers to request i: its length and bytes
// depend on i, so a response under another stream's headers shows.
func body(i int) []byte {
	b := make([]byte, 100+37*i)
	for k := range b {
		b[k] = byte('a' + (i+k)%26)
	}
	return b
}

// Status answered to request i: some errors among the successes.
func statusOf(i int) int {
	if i%10 == 7 {
		return http.StatusNotFound
	}
	return http.StatusOK
}

// traceparentOf is what the client sends with request i: every fifth
// carries a trace context of its own, as an instrumented caller would.
func traceparentOf(i int) string {
	if i%5 != 0 {
		return ""
	}
	return traceparentFor(i)
}

// traceparentFor is the trace context of request i: trace 0xabc000+i
// under span 0xdef000+i.
func traceparentFor(i int) string { return fmt.Sprintf("00-%032x-%016x-01", 0xabc000+i, 0xdef000+i) }

// waitOf is how long the handler of request i waits: streams end out of
// the order they began.
func waitOf(i int) time.Duration { return time.Duration((i*7)%20) * time.Millisecond }

// h2cServer serves HTTP/2 without TLS: with prior knowledge (net/http),
// or, with upgrade, also to HTTP/1.1 requests that ask for it (Upgrade:
// h2c, x/net's h2c handler), up to maxStreams streams at once.
func h2cServer(upgrade bool, maxStreams uint32) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	protos.SetHTTP1(true) // steady -http1's
	srv := &http.Server{Protocols: &protos, Handler: answer}
	if upgrade {
		srv = &http.Server{Handler: h2c.NewHandler(answer, &http2.Server{MaxConcurrentStreams: maxStreams})}
	}
	return srv.Serve(ln)
}

// answer serves /req/<i> over HTTP/2, and h2-front's calls, /work/...
var answer = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/work/") {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, "ok\n")
		return
	}
	i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/req/"))
	if err != nil {
		http.NotFound(w, r)
		return
	}
	io.Copy(io.Discard, r.Body)
	time.Sleep(waitOf(i))
	if workBackend != "" {
		if err := callBackend(r.Context(), strconv.Itoa(i)); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}
	w.WriteHeader(statusOf(i))
	w.Write(body(i))
})

// h2cClient sends n requests at once over one prior-knowledge h2c
// connection (opened by a first request, /req/0, before the others).
func h2cClient(addr string, n int) error {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protos, MaxConnsPerHost: 1}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	get := func(i int) error { return fetch(c, fmt.Sprintf("http://%s/req/%d", addr, i), i, 2) }
	if err := get(0); err != nil {
		return err
	}
	if err := concurrently(1, n, get); err != nil {
		return err
	}
	fmt.Println("ok")
	return nil
}

// h2TracedClient sends n requests /req/<i> over one HTTP/2 connection
// (prior-knowledge h2c, or with useTLS h2 by ALPN), atOnce at a time,
// each with a traceparent of its own (traceparentFor), as an
// instrumented caller sends; with noTP none.
func h2TracedClient(addr string, n, atOnce int, useTLS, noTP bool) error {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(!useTLS)
	protos.SetHTTP2(useTLS)
	tr := &http.Transport{Protocols: &protos, MaxConnsPerHost: 1}
	scheme := "http"
	if useTLS {
		tr.TLSClientConfig, scheme = &tls.Config{InsecureSkipVerify: true}, "https"
	}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	tp := traceparentFor
	if noTP {
		tp = func(int) string { return "" }
	}
	slots := make(chan struct{}, atOnce)
	get := func(i int) error {
		slots <- struct{}{}
		defer func() { <-slots }()
		return fetchWith(c, fmt.Sprintf("%s://%s/req/%d", scheme, addr, i), i, 2, tp(i))
	}
	if err := concurrently(0, n, get); err != nil {
		return err
	}
	fmt.Println("ok")
	return nil
}

// steady sends requests 32 at a time for d, over one prior-knowledge h2c
// connection, or with http1 over 32 kept-alive HTTP/1.1 connections (with
// noKeepAlive, a connection per request); with useTLS, the same over TLS
// (https-server's, HTTP/2 by ALPN).
// Request k asks for /req/(k mod paths): with more paths than an HPACK
// table holds, paths keep entering the tables, so a table out of step
// names the wrong one. It prints how many it sent.
func steady(addr string, d time.Duration, http1, noKeepAlive, useTLS bool, paths int) error {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(!http1 && !useTLS)
	protos.SetHTTP2(!http1 && useTLS)
	protos.SetHTTP1(http1)
	tr := &http.Transport{Protocols: &protos, MaxConnsPerHost: 1}
	scheme := "http"
	if useTLS {
		tr.TLSClientConfig, scheme = &tls.Config{InsecureSkipVerify: true}, "https"
	}
	major := 2
	if http1 {
		tr.MaxConnsPerHost, tr.MaxIdleConnsPerHost, major = 32, 32, 1
		tr.DisableKeepAlives = noKeepAlive
	}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	var sent atomic.Int64
	ctx, stop := context.WithTimeout(context.Background(), d)
	defer stop()
	go func() { // a line on stdin, or d, ends it
		bufio.NewReader(os.Stdin).ReadString('\n')
		stop()
	}()
	err := concurrently(0, 32, func(int) error {
		for ctx.Err() == nil {
			i := int(sent.Add(1)-1) % paths
			if err := fetch(c, fmt.Sprintf("%s://%s/req/%d", scheme, addr, i), i, major); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Println("ok", sent.Load())
	return nil
}

// httpsServer serves answer over TLS, HTTP/1.1 or HTTP/2 as the client
// asks (ALPN), with a certificate made at start.
func httpsServer() error {
	cert, err := testcert.New()
	if err != nil {
		return err
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	return (&http.Server{Protocols: &protos, Handler: answer}).Serve(ln)
}

// httpsClient sends n requests, 16 at a time, over HTTPS: with http1,
// HTTP/1.1 on up to 16 kept-alive connections, else HTTP/2 on one.
func httpsClient(addr string, n int, http1 bool) error {
	var protos http.Protocols
	protos.SetHTTP1(http1)
	protos.SetHTTP2(!http1)
	tr := &http.Transport{Protocols: &protos, MaxConnsPerHost: 16, MaxIdleConnsPerHost: 16,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	wantMajor := 2
	if http1 {
		wantMajor = 1
	}
	sem := make(chan struct{}, 16)
	get := func(i int) error {
		sem <- struct{}{}
		defer func() { <-sem }()
		return fetch(c, fmt.Sprintf("https://%s/req/%d", addr, i), i, wantMajor)
	}
	if err := concurrently(0, n, get); err != nil {
		return err
	}
	fmt.Println("ok")
	return nil
}

// fetch sends request i to url and checks its answer byte for byte, and
// that it came over HTTP/major.
func fetch(c *http.Client, url string, i, major int) error {
	return fetchWith(c, url, i, major, traceparentOf(i))
}

// fetchWith is fetch with the traceparent tp, if any.
func fetchWith(c *http.Client, url string, i, major int, tp string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if tp != "" {
		req.Header.Set("traceparent", tp)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("request %d: %w", i, err)
	}
	if resp.ProtoMajor != major || resp.StatusCode != statusOf(i) || string(got) != string(body(i)) {
		return fmt.Errorf("request %d: %s %d, %d body bytes (want HTTP/%d, %d, %d bytes as sent)",
			i, resp.Proto, resp.StatusCode, len(got), major, statusOf(i), len(body(i)))
	}
	return nil
}

// concurrently runs f(i) for i in [from, n) at once and returns the
// first error.
func concurrently(from, n int, f func(int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := from; i < n; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- f(i) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// The gRPC service: Get answers a key's value (NOT_FOUND for keys
// starting "missing"), List streams three values for a key.
const serviceName = "weft.test.Store"

var storeDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Get", Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		in := new(wrapperspb.StringValue)
		if err := dec(in); err != nil {
			return nil, err
		}
		if strings.HasPrefix(in.Value, "missing") {
			return nil, status.Errorf(codes.NotFound, "no key %s", in.Value)
		}
		return wrapperspb.String("value-of-" + in.Value), nil
	}}},
	Streams: []grpc.StreamDesc{{StreamName: "List", ServerStreams: true, Handler: func(_ any, stream grpc.ServerStream) error {
		in := new(wrapperspb.StringValue)
		if err := stream.RecvMsg(in); err != nil {
			return err
		}
		for k := range 3 {
			if err := stream.SendMsg(wrapperspb.String(fmt.Sprintf("%s-%d", in.Value, k))); err != nil {
				return err
			}
		}
		return nil
	}}},
}

// work answers grpc-front's calls, /weft.test.Work/Call<i>[_<leg>], of
// any name: it waits a time that depends on i, then answers the method's
// name.
func work(_ any, stream grpc.ServerStream) error {
	method, _ := grpc.MethodFromServerStream(stream)
	name, ok := strings.CutPrefix(method, "/weft.test.Work/Call")
	if !ok {
		return status.Errorf(codes.Unimplemented, "no method %s", method)
	}
	in := new(wrapperspb.StringValue)
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	n, _, _ := strings.Cut(name, "_")
	wait(n)
	if workBackend != "" {
		if err := callBackend(stream.Context(), n); err != nil {
			return status.Errorf(codes.Unavailable, "backend: %v", err)
		}
	}
	return stream.SendMsg(wrapperspb.String(method))
}

// workBackend is the HTTP/1.1 server work calls, if any.
var workBackend string

// callBackend makes GET /work/<n> on workBackend, from the handler's own
// goroutine, and reads the answer.
func callBackend(ctx context.Context, n string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+workBackend+"/work/"+n, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /work/%s: %s", n, resp.Status)
	}
	return nil
}

// wait sleeps a time that depends on request n, so that concurrent
// requests' calls overlap in varied orders.
func wait(n string) {
	i, _ := strconv.Atoi(n)
	time.Sleep(time.Duration(i*7%11) * time.Millisecond)
}

func grpcServer(useTLS bool, certOut string) error {
	var opts []grpc.ServerOption
	if useTLS {
		cert, err := testcert.New()
		if err != nil {
			return err
		}
		if certOut != "" {
			pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
			if err := os.WriteFile(certOut, pemCert, 0o644); err != nil {
				return err
			}
		}
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(&cert)))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	// The collector's mark workers start at the first collection, from
	// whichever goroutine begins it: begun by grpc-go's reader while it
	// decodes a stream's HEADERS, that stream's handler would not get its
	// span from weft (docs/architecture.md, "HTTP/2 and gRPC"). Started
	// now, the calls the tests count are all followed.
	runtime.GC()
	s := grpc.NewServer(append(opts, grpc.UnknownServiceHandler(work))...)
	s.RegisterService(&storeDesc, nil)
	return s.Serve(ln)
}

// dialGRPC is a client of the gRPC server at addr, over h2c or TLS (the
// test's certificate is not checked).
func dialGRPC(addr string, useTLS bool) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true})
	}
	return grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
}

// grpcClient makes n calls of each kind on one connection, concurrently:
// Get of a key (OK), Get of a missing key (NOT_FOUND), List (3 messages).
func grpcClient(addr string, n int, useTLS bool) error {
	cc, err := dialGRPC(addr, useTLS)
	if err != nil {
		return err
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func(i int) error {
		key := fmt.Sprintf("k%d", i)
		out := new(wrapperspb.StringValue)
		if err := cc.Invoke(ctx, "/"+serviceName+"/Get", wrapperspb.String(key), out); err != nil || out.Value != "value-of-"+key {
			return fmt.Errorf("Get %s: %q, %v", key, out.Value, err)
		}
		err := cc.Invoke(ctx, "/"+serviceName+"/Get", wrapperspb.String("missing"+key), out)
		if status.Code(err) != codes.NotFound {
			return fmt.Errorf("Get missing%s: %v, want NOT_FOUND", key, err)
		}
		st, err := cc.NewStream(ctx, &storeDesc.Streams[0], "/"+serviceName+"/List")
		if err != nil {
			return err
		}
		if err := st.SendMsg(wrapperspb.String(key)); err != nil {
			return err
		}
		if err := st.CloseSend(); err != nil {
			return err
		}
		for k := 0; ; k++ {
			m := new(wrapperspb.StringValue)
			err := st.RecvMsg(m)
			if errors.Is(err, io.EOF) {
				if k != 3 {
					return fmt.Errorf("List %s: %d messages, want 3", key, k)
				}
				return nil
			}
			if err != nil || m.Value != fmt.Sprintf("%s-%d", key, k) {
				return fmt.Errorf("List %s message %d: %q, %v", key, k, m.Value, err)
			}
		}
	}
	if err := concurrently(0, n, call); err != nil {
		return err
	}
	fmt.Println("ok")
	return nil
}

// grpcTracedClient makes n calls /weft.test.Work/Call<i> on one
// connection, 32 at a time, each with a traceparent of its own in its
// metadata (traceparentFor), as an instrumented caller sends; with noTP
// none. (More at once, grpc-go writes more
// than the 4 KiB of HEADERS per call that weft's kernel side copies.)
func grpcTracedClient(addr string, n int, useTLS, noTP bool) error {
	cc, err := dialGRPC(addr, useTLS)
	if err != nil {
		return err
	}
	defer cc.Close()
	slots := make(chan struct{}, 32)
	call := func(i int) error {
		slots <- struct{}{}
		defer func() { <-slots }()
		ctx := context.Background()
		if !noTP {
			ctx = metadata.AppendToOutgoingContext(ctx, "traceparent", traceparentFor(i))
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		method := fmt.Sprintf("/weft.test.Work/Call%d", i)
		out := new(wrapperspb.StringValue)
		if err := cc.Invoke(ctx, method, wrapperspb.String(strconv.Itoa(i)), out); err != nil || out.Value != method {
			return fmt.Errorf("%s: %q, %v", method, out.Value, err)
		}
		return nil
	}
	if err := concurrently(0, n, call); err != nil {
		return err
	}
	fmt.Println("ok")
	return nil
}

// load is the benchmark's client (test/bench -grpc, -h2): for each line
// "<calls/s> <duration>" on stdin it opens a connection, makes calls at
// that rate (open loop) for that long, closes the connection and prints
// "<calls> <p50 ns> <p99 ns>". A connection per run: weft, started
// between runs, follows only connections it sees open.
func load(addr string, dial func(addr string) (call func() error, closer func(), err error)) error {
	fmt.Println(os.Getpid())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) != 2 {
			return fmt.Errorf("load line %q: want <calls/s> <duration>", in.Text())
		}
		rate, err := strconv.Atoi(f[0])
		d, derr := time.ParseDuration(f[1])
		if err != nil || derr != nil || rate <= 0 || d <= 0 {
			return fmt.Errorf("load line %q: %v %v", in.Text(), err, derr)
		}
		lat, err := loadRun(addr, rate, d, dial)
		if err != nil {
			return err
		}
		slices.Sort(lat)
		fmt.Println(len(lat), int64(lat[len(lat)/2]), int64(lat[len(lat)*99/100]))
	}
	return in.Err()
}

// grpcCall makes unary Get calls on a grpc-go connection to addr.
func grpcCall(addr string) (func() error, func(), error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return func() error {
		out := new(wrapperspb.StringValue)
		return cc.Invoke(context.Background(), "/"+serviceName+"/Get", wrapperspb.String("k"), out)
	}, func() { cc.Close() }, nil
}

// h2Call makes GET /req/0 (answered at once) on a prior-knowledge h2c
// connection to addr, with a traceparent as an instrumented caller sends
// (the server's handler then serves the stream's span, h2serve.h).
func h2Call(addr string) (func() error, func(), error) {
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	tr := &http.Transport{Protocols: &protos, MaxConnsPerHost: 1}
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	url := "http://" + addr + "/req/0"
	return func() error { return fetchWith(c, url, 0, 2, traceparentFor(0)) }, tr.CloseIdleConnections, nil
}

func loadRun(addr string, rate int, d time.Duration, dial func(string) (func() error, func(), error)) ([]time.Duration, error) {
	call, closer, err := dial(addr)
	if err != nil {
		return nil, err
	}
	defer closer()
	if err := call(); err != nil { // connected before the clock starts
		return nil, err
	}
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs []error
		wg   sync.WaitGroup
	)
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for end := time.Now().Add(d); time.Now().Before(end); {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			err := call()
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			lat = append(lat, time.Since(t0))
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("%d calls failed, first: %w", len(errs), errs[0])
	}
	return lat, nil
}

// h2Front serves HTTP/1.1 and calls backend over HTTP/2 on one connection
// (h2c with prior knowledge, or TLS), so that the streams of many
// requests interleave on it:
//
//	/req/N  waits 0-10 ms, then GETs <backend>/work/N (-call-path: /work/)
//	/fan/N  waits 0-10 ms, then GETs <backend>/work/N/a and /work/N/b
//	        from two goroutines at once
func h2Front(backend, callPath string, useTLS bool) error {
	var protos http.Protocols
	tr := &http.Transport{MaxConnsPerHost: 1}
	base := "http://" + backend + callPath
	if useTLS {
		protos.SetHTTP2(true)
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		base = "https://" + backend + callPath
	} else {
		protos.SetUnencryptedHTTP2(true)
	}
	tr.Protocols = &protos
	// A hang guard, as long as the other clients' here: in a QEMU guest
	// under software emulation, 32 requests queued on the one TLS
	// connection waited past 10 s (6.12, kprobe path, 2026-12-07).
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return serveFront(false, func(_ context.Context, n, leg string) error {
		url := base + n
		if leg != "" {
			url += "/" + leg
		}
		resp, err := client.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		want := http.StatusOK
		if i, err := strconv.Atoi(n); err == nil && callPath == "/req/" {
			want = statusOf(i) // an h2app server's answer to /req/<i>
		}
		if resp.StatusCode != want || resp.ProtoMajor != 2 {
			return fmt.Errorf("%s: %s %s", url, resp.Proto, resp.Status)
		}
		return nil
	})
}

// grpcFront is h2-front calling a gRPC backend (grpc-server) on one
// connection: /weft.test.Work/Call<i>, and Call<i>_a, Call<i>_b.
func grpcFront(backend string, useTLS bool) error {
	cc, err := dialGRPC(backend, useTLS)
	if err != nil {
		return err
	}
	defer cc.Close()
	return serveFront(false, func(ctx context.Context, n, leg string) error {
		method := "/weft.test.Work/Call" + n
		if leg != "" {
			method += "_" + leg
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second) // a hang guard, as h2Front's
		defer cancel()
		out := new(wrapperspb.StringValue)
		if err := cc.Invoke(ctx, method, wrapperspb.String(n), out); err != nil || out.Value != method {
			return fmt.Errorf("%s: %q, %v", method, out.Value, err)
		}
		return nil
	})
}

// serveFront serves /req/<i>, which waits a time that depends on i and
// makes call(i, ""), and /fan/<i>, which waits and makes call(i, "a")
// and call(i, "b") from two goroutines at once.
func serveFront(serveTLS bool, call func(ctx context.Context, n, leg string) error) error {
	mux := http.NewServeMux()
	mux.HandleFunc("/req/", func(w http.ResponseWriter, r *http.Request) {
		n := strings.TrimPrefix(r.URL.Path, "/req/")
		wait(n)
		if err := call(r.Context(), n, ""); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/fan/", func(w http.ResponseWriter, r *http.Request) {
		n := strings.TrimPrefix(r.URL.Path, "/fan/")
		wait(n)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, leg := range []string{"a", "b"} {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = call(r.Context(), n, leg) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		io.WriteString(w, "ok\n")
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	if !serveTLS {
		return http.Serve(ln, mux)
	}
	cert, err := testcert.New()
	if err != nil {
		return err
	}
	// HTTP/1.1 only: each request's handler runs on the goroutine that
	// read it through crypto/tls.
	return http.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}), mux)
}

// rawFront is a front whose handlers call an HTTP/1.1 backend over a
// plain socket of their own goroutine, a fresh connection per call
// (GET /work/<n>[/<leg>]); with serveTLS, the front serves HTTPS/1.1, so
// that /req/'s call is the plaintext socket call of a goroutine whose
// last socket call was crypto/tls's.
func rawFront(backend string, serveTLS bool) error {
	return serveFront(serveTLS, func(_ context.Context, n, leg string) error {
		path := "/work/" + n
		if leg != "" {
			path += "/" + leg
		}
		c, err := net.DialTimeout("tcp", backend, 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: backend\r\nConnection: close\r\n\r\n"); err != nil {
			return err
		}
		resp, err := io.ReadAll(c)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(resp), "HTTP/1.1 200 ") {
			return fmt.Errorf("%s: %.40q", path, resp)
		}
		return nil
	})
}

// tlsDeepClient sends n HTTP/1.1 requests, /work/0 to /work/n-1, one after
// another on one TLS connection, each written by crypto/tls's Write from a
// new goroutine that first recurses i levels deep: across the depths,
// some Write must grow its stack at its entry (runtime.morestack), after
// which the call starts over.
func tlsDeepClient(addr string, n int) error {
	conn, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		return err
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	for i := range n {
		req := []byte(fmt.Sprintf("GET /work/%d HTTP/1.1\r\nHost: %s\r\n\r\n", i, addr))
		done := make(chan error)
		go func() { done <- deepWrite(i, conn, req) }()
		if err := <-done; err != nil {
			return err
		}
		resp, err := http.ReadResponse(r, nil)
		if err != nil {
			return fmt.Errorf("request %d: %w", i, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || string(got) != "ok\n" {
			return fmt.Errorf("request %d: %s, %d body bytes, %v", i, resp.Status, len(got), err)
		}
	}
	fmt.Println("ok")
	return nil
}

// deepWrite recurses depth levels, then writes b to c.
//
//go:noinline
func deepWrite(depth int, c *tls.Conn, b []byte) error {
	if depth > 0 {
		return deepWrite(depth-1, c, b)
	}
	_, err := c.Write(b)
	return err
}
