package h2

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder keeps each Read and Write call of the server's connections as a
// segment, as the kernel side would see the server's recv and send calls.
type recorder struct {
	mu       sync.Mutex
	in, out  [][]byte
	accepted int
}

type recConn struct {
	net.Conn
	r *recorder
}

func (c recConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.r.mu.Lock()
		c.r.in = append(c.r.in, append([]byte(nil), b[:n]...))
		c.r.mu.Unlock()
	}
	return n, err
}

func (c recConn) Write(b []byte) (int, error) {
	c.r.mu.Lock()
	c.r.out = append(c.r.out, append([]byte(nil), b...))
	c.r.mu.Unlock()
	return c.Conn.Write(b)
}

type recListener struct {
	net.Listener
	r *recorder
}

func (l recListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.r.mu.Lock()
		l.r.accepted++
		l.r.mu.Unlock()
	}
	return recConn{c, l.r}, err
}

// bodyLen is what the handler answers to request i.
func bodyLen(i int) int { return 100 + 37*i }

// h2cExchange runs n concurrent requests from Go's client to Go's server
// over one prior-knowledge h2c connection and returns the server's segments.
func h2cExchange(t *testing.T, n int) *recorder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	srv := &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/req/"))
		time.Sleep(time.Duration(rand.IntN(5)) * time.Millisecond) // responses interleave
		w.Write([]byte(strings.Repeat("b", bodyLen(i))))
	})}
	go srv.Serve(recListener{ln, rec})
	defer srv.Shutdown(context.Background())

	tr := &http.Transport{Protocols: &protos}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	// One request first, so the others share its connection.
	get := func(i int) error {
		resp, err := client.Get(fmt.Sprintf("http://%s/req/%d", ln.Addr(), i))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && len(b) != bodyLen(i) {
			err = fmt.Errorf("request %d: %d body bytes", i, len(b))
		}
		return err
	}
	if err := get(0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 1; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := get(i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if rec.accepted != 1 {
		t.Fatalf("%d connections, want 1", rec.accepted)
	}
	return rec
}

type exchange struct {
	path, status string
	respData     int
	reqEnded     bool
	respEnded    bool
}

// follow feeds both directions, each segment cut to capture bytes (0: all).
func follow(rec *recorder, capture int) (map[uint32]*exchange, error, error) {
	streams := map[uint32]*exchange{}
	get := func(id uint32) *exchange {
		if streams[id] == nil {
			streams[id] = &exchange{}
		}
		return streams[id]
	}
	feed := func(p *Parser, segs [][]byte, request bool) error {
		for _, s := range segs {
			c := s
			if capture > 0 && len(c) > capture {
				c = c[:capture]
			}
			for _, e := range p.Feed(c, len(s), 1) {
				if e.Kind == KindGoAway {
					continue
				}
				x := get(e.StreamID)
				for _, f := range e.Fields {
					switch {
					case request && f.Name == ":path":
						x.path = f.Value
					case !request && f.Name == ":status":
						x.status = f.Value
					}
				}
				if !request && e.Kind == KindData {
					x.respData += e.DataBytes
				}
				if e.EndStream && request {
					x.reqEnded = true
				} else if e.EndStream {
					x.respEnded = true
				}
			}
		}
		return p.Lost()
	}
	inErr := feed(NewParser(true), rec.in, true)
	outErr := feed(NewParser(false), rec.out, false)
	return streams, inErr, outErr
}

// 100 interleaved streams on one connection: each with its own path,
// status and body length.
func TestNetHTTPStreams(t *testing.T) {
	const n = 100
	rec := h2cExchange(t, n)
	streams, inErr, outErr := follow(rec, 0)
	if inErr != nil || outErr != nil {
		t.Fatalf("lost: requests %v, responses %v", inErr, outErr)
	}
	if len(streams) != n {
		t.Fatalf("%d streams, want %d", len(streams), n)
	}
	paths := map[string]bool{}
	for id, x := range streams {
		i, err := strconv.Atoi(strings.TrimPrefix(x.path, "/req/"))
		if err != nil || x.status != "200" || x.respData != bodyLen(i) || !x.reqEnded || !x.respEnded || paths[x.path] {
			t.Fatalf("stream %d: %+v (want status 200, %d bytes, both ends, path unique)", id, x, bodyLen(i))
		}
		paths[x.path] = true
	}
}

// With the kernel's capture limit, a parser either follows a stream
// right or stops; it never reports a stream with another's headers.
func TestNetHTTPCaptureLimit(t *testing.T) {
	rec := h2cExchange(t, 100)
	streams, inErr, outErr := follow(rec, 512)
	t.Logf("capture 512: %d streams, lost: requests %v, responses %v", len(streams), inErr, outErr)
	for id, x := range streams {
		if x.path == "" || x.status == "" {
			continue
		}
		i, _ := strconv.Atoi(strings.TrimPrefix(x.path, "/req/"))
		if x.status != "200" || (x.respEnded && x.respData != bodyLen(i)) {
			t.Fatalf("stream %d: %+v: wrong", id, x)
		}
	}
}

// The same exchange paired by Conn: 100 exchanges, each its own.
func TestNetHTTPExchanges(t *testing.T) {
	const n = 100
	rec := h2cExchange(t, n)
	c := NewConn()
	var done []Exchange
	for _, s := range rec.in {
		done = append(done, c.FeedRequest(s, len(s), 1)...)
	}
	for _, s := range rec.out {
		done = append(done, c.FeedResponse(s, len(s), 2)...)
	}
	if c.Lost() != nil || len(done) != n {
		t.Fatalf("lost %v, %d exchanges, want %d", c.Lost(), len(done), n)
	}
	paths := map[string]bool{}
	for _, x := range done {
		i, err := strconv.Atoi(strings.TrimPrefix(x.Path, "/req/"))
		if err != nil || x.Method != "GET" || x.Status != 200 || x.ResponseBytes != bodyLen(i) || x.Reset || paths[x.Path] {
			t.Fatalf("exchange %+v: want GET, 200, %d bytes, path unique", x, bodyLen(i))
		}
		paths[x.Path] = true
	}
}
