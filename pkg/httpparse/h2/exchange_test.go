package h2

import (
	"bytes"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

type frames struct {
	t   *testing.T
	buf bytes.Buffer
	fr  *http2.Framer
	hb  bytes.Buffer
	enc *hpack.Encoder
}

func newFrames(t *testing.T, preface bool) *frames {
	f := &frames{t: t}
	if preface {
		f.buf.WriteString(ClientPreface)
	}
	f.fr = http2.NewFramer(&f.buf, nil)
	f.enc = hpack.NewEncoder(&f.hb)
	return f
}

func (f *frames) headers(id uint32, end bool, kv ...string) {
	f.hb.Reset()
	for i := 0; i < len(kv); i += 2 {
		f.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	if err := f.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: f.hb.Bytes(), EndHeaders: true, EndStream: end}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *frames) data(id uint32, end bool, n int) {
	if err := f.fr.WriteData(id, end, make([]byte, n)); err != nil {
		f.t.Fatal(err)
	}
}

// take returns the bytes written since the last call.
func (f *frames) take() []byte {
	b := append([]byte(nil), f.buf.Bytes()...)
	f.buf.Reset()
	return b
}

// Three gRPC calls interleaved on one connection: OK with trailers, an
// error as a trailers-only response, and one the client resets.
func TestGRPCExchanges(t *testing.T) {
	c := NewConn()
	req, resp := newFrames(t, true), newFrames(t, false)
	var done []Exchange
	sendReq := func(ts uint64) { b := req.take(); done = append(done, c.FeedRequest(b, len(b), ts)...) }
	sendResp := func(ts uint64) { b := resp.take(); done = append(done, c.FeedResponse(b, len(b), ts)...) }

	call := func(id uint32, method string) {
		req.headers(id, false, ":method", "POST", ":scheme", "http", ":path", "/echo.Echo/"+method,
			":authority", "echo:50051", "content-type", "application/grpc", "te", "trailers")
		req.data(id, true, 12)
	}
	call(1, "Unary")
	call(3, "Missing")
	sendReq(10)
	resp.headers(1, false, ":status", "200", "content-type", "application/grpc")
	resp.headers(3, true, ":status", "200", "content-type", "application/grpc", "grpc-status", "5", "grpc-message", "not found")
	sendResp(20)
	call(5, "Stream")
	sendReq(25)
	resp.data(1, false, 17)
	resp.headers(1, true, "grpc-status", "0")
	sendResp(30)
	if err := req.fr.WriteRSTStream(5, http2.ErrCodeCancel); err != nil {
		t.Fatal(err)
	}
	sendReq(40)

	if c.Lost() != nil || len(done) != 3 {
		t.Fatalf("lost %v, %d exchanges, want 3: %+v", c.Lost(), len(done), done)
	}
	byID := map[uint32]Exchange{}
	for _, x := range done {
		byID[x.StreamID] = x
	}
	ok := byID[1]
	if s, m, _ := ok.GRPCMethod(); !ok.IsGRPC() || s != "echo.Echo" || m != "Unary" || ok.Status != 200 || ok.GRPCStatus != 0 ||
		ok.Start != 10 || ok.RequestEnd != 10 || ok.ResponseStart != 20 || ok.End != 30 || ok.RequestBytes != 12 || ok.ResponseBytes != 17 {
		t.Errorf("OK call: %+v", ok)
	}
	miss := byID[3]
	if miss.GRPCStatus != 5 || miss.GRPCMessage != "not found" || miss.End != 20 || miss.Path != "/echo.Echo/Missing" {
		t.Errorf("trailers-only error: %+v", miss)
	}
	rst := byID[5]
	if !rst.Reset || rst.ErrCode != uint32(http2.ErrCodeCancel) || rst.Status != 0 || rst.End != 40 || rst.GRPCStatus != -1 {
		t.Errorf("reset call: %+v", rst)
	}
}

// Streams beyond MaxOpenStreams are counted and not followed; the
// followed ones stay right.
func TestOpenStreamLimit(t *testing.T) {
	c := NewConn()
	req := newFrames(t, true)
	for i := 0; i < MaxOpenStreams+10; i++ {
		req.headers(uint32(2*i+1), true, ":method", "GET", ":path", "/x")
	}
	b := req.take()
	c.FeedRequest(b, len(b), 1)
	if c.Dropped != 10 || len(c.open) != MaxOpenStreams {
		t.Fatalf("dropped %d, open %d", c.Dropped, len(c.open))
	}
}
