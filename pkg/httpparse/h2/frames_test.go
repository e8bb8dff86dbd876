package h2

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// elide mirrors the kernel's HTTP/2 copy (bpf/include/h2walk.h): each
// segment keeps its frame headers and the payloads of the frames the
// parser decodes; the rest of every payload is left out. State carries
// across segments as in the kernel's per-direction walk.
type elide struct {
	preface int
	left    int
	copy    bool
	hdr     []byte
}

func (w *elide) segment(s []byte) []byte {
	var out []byte
	for len(s) > 0 {
		switch {
		case w.preface > 0:
			n := min(w.preface, len(s))
			out, s, w.preface = append(out, s[:n]...), s[n:], w.preface-n
		case w.left > 0:
			n := min(w.left, len(s))
			if w.copy {
				out = append(out, s[:n]...)
			}
			s, w.left = s[n:], w.left-n
		default:
			n := min(frameHeaderLen-len(w.hdr), len(s))
			w.hdr = append(w.hdr, s[:n]...)
			out, s = append(out, s[:n]...), s[n:]
			if len(w.hdr) == frameHeaderLen {
				h := parseFrameHeader(w.hdr)
				w.hdr = w.hdr[:0]
				w.left = int(h.length)
				w.copy = h.typ == FrameHeaders || h.typ == FrameContinuation || h.typ == FramePushPromise ||
					h.typ == FrameRSTStream || h.typ == FrameGoAway
			}
		}
	}
	return out
}

// resplit cuts the concatenation of segs at random points.
func resplit(segs [][]byte, r *rand.Rand) [][]byte {
	var all []byte
	for _, s := range segs {
		all = append(all, s...)
	}
	var out [][]byte
	for len(all) > 0 {
		n := min(1+r.IntN(64), len(all))
		out = append(out, all[:n])
		all = all[n:]
	}
	return out
}

// The kernel's copies of Go's 100 interleaved streams, as written and in
// random pieces (frame headers and header blocks cut across calls), give
// the same 100 exchanges as the whole bytes.
func TestFramesExchanges(t *testing.T) {
	const n = 100
	rec := h2cExchange(t, n)
	r := rand.New(rand.NewPCG(1, 2))
	for _, split := range []string{"as written", "random pieces"} {
		in, out := rec.in, rec.out
		if split != "as written" {
			in, out = resplit(in, r), resplit(out, r)
		}
		c := NewFramesConn()
		var done []Exchange
		req, resp := &elide{preface: len(ClientPreface)}, &elide{}
		copied, moved := 0, 0
		for _, s := range in {
			f := req.segment(s)
			copied, moved = copied+len(f), moved+len(s)
			done = append(done, c.FeedRequest(f, len(f), 1)...)
		}
		for _, s := range out {
			f := resp.segment(s)
			copied, moved = copied+len(f), moved+len(s)
			done = append(done, c.FeedResponse(f, len(f), 2)...)
		}
		if c.Lost() != nil || len(done) != n {
			t.Fatalf("%s: lost %v, %d exchanges, want %d", split, c.Lost(), len(done), n)
		}
		paths := map[string]bool{}
		for _, x := range done {
			i, err := strconv.Atoi(strings.TrimPrefix(x.Path, "/req/"))
			if err != nil || x.Method != "GET" || x.Status != 200 || x.ResponseBytes != bodyLen(i) || x.Reset || paths[x.Path] {
				t.Fatalf("%s: exchange %+v: want GET, 200, %d bytes, path unique", split, x, bodyLen(i))
			}
			paths[x.Path] = true
		}
		t.Logf("%s: %d of %d bytes copied", split, copied, moved)
	}
}

// A connection the kernel lost stops, whatever comes after.
func TestFramesLose(t *testing.T) {
	c := NewFramesConn()
	c.Lose(ErrFramingLost)
	f := newFrames(t, true)
	f.headers(1, true, ":method", "GET", ":path", "/", ":scheme", "http", ":authority", "a")
	if got := c.FeedRequest(f.take(), 0, 1); len(got) != 0 || c.Lost() != ErrFramingLost {
		t.Fatalf("after Lose: %v, lost %v", got, c.Lost())
	}
}
