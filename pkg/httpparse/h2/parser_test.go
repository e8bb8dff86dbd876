package h2

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// clientBytes is a client direction: preface, SETTINGS, then per stream a
// HEADERS block (split into CONTINUATIONs when long) and a DATA frame.
func clientBytes(t *testing.T, streams int, padded bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(ClientPreface)
	fr := http2.NewFramer(&buf, nil)
	if err := fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for i := 0; i < streams; i++ {
		id := uint32(2*i + 1)
		hb.Reset()
		for _, f := range []hpack.HeaderField{
			{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
			{Name: ":authority", Value: "backend:8080"}, {Name: ":path", Value: pathOf(i)},
			{Name: "content-type", Value: "application/grpc"},
			{Name: "x-filler", Value: string(bytes.Repeat([]byte{'f'}, 40*i))}, // makes later blocks need CONTINUATION
			{Name: "traceparent", Value: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		} {
			if err := enc.WriteField(f); err != nil {
				t.Fatal(err)
			}
		}
		block := hb.Bytes()
		first := block
		if len(first) > 100 {
			first = block[:100]
		}
		p := http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndHeaders: len(first) == len(block)}
		if padded {
			p.PadLength = 7
			p.Priority = http2.PriorityParam{StreamDep: 0, Weight: 15}
		}
		if err := fr.WriteHeaders(p); err != nil {
			t.Fatal(err)
		}
		for rest := block[len(first):]; len(rest) > 0; {
			n := min(len(rest), 100)
			if err := fr.WriteContinuation(id, n == len(rest), rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if err := fr.WriteData(id, true, bytes.Repeat([]byte{'d'}, 10+i)); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func pathOf(i int) string { return "/svc.Echo/Call/" + string(rune('a'+i%26)) + string(rune('0'+i/26)) }

type streamSeen struct {
	path, traceparent string
	data              int
	ended             bool
}

func collect(t *testing.T, evs []Event, seen map[uint32]*streamSeen) {
	t.Helper()
	for _, e := range evs {
		s := seen[e.StreamID]
		if s == nil {
			s = &streamSeen{}
			seen[e.StreamID] = s
		}
		switch e.Kind {
		case KindHeaders:
			for _, f := range e.Fields {
				switch f.Name {
				case ":path":
					s.path = f.Value
				case "traceparent":
					s.traceparent = f.Value
				case "x-filler":
					t.Errorf("stream %d: x-filler reported, only kept names should be", e.StreamID)
				}
			}
		case KindData:
			s.data += e.DataBytes
		}
		if e.EndStream {
			s.ended = true
		}
	}
}

func check(t *testing.T, seen map[uint32]*streamSeen, streams int) {
	t.Helper()
	if len(seen) != streams {
		t.Fatalf("%d streams seen, want %d", len(seen), streams)
	}
	for i := 0; i < streams; i++ {
		s := seen[uint32(2*i+1)]
		if s == nil || s.path != pathOf(i) || s.data != 10+i || !s.ended ||
			s.traceparent != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
			t.Fatalf("stream %d: %+v, want path %s, %d data bytes, ended", 2*i+1, s, pathOf(i), 10+i)
		}
	}
}

// Every split of the same bytes gives the same streams.
func TestSplits(t *testing.T) {
	const streams = 40
	for _, padded := range []bool{false, true} {
		b := clientBytes(t, streams, padded)
		rng := rand.New(rand.NewPCG(1, 2))
		for name, cut := range map[string]func() int{
			"whole":        func() int { return len(b) },
			"byte-by-byte": func() int { return 1 },
			"random":       func() int { return 1 + rng.IntN(64) },
		} {
			p := NewParser(true)
			seen := map[uint32]*streamSeen{}
			for rest := b; len(rest) > 0; {
				n := min(cut(), len(rest))
				collect(t, p.Feed(rest[:n], n, 1), seen)
				rest = rest[n:]
			}
			if p.Lost() != nil {
				t.Fatalf("padded=%v %s: lost: %v", padded, name, p.Lost())
			}
			check(t, seen, streams)
		}
	}
}

// Uncaptured DATA bytes are counted; an uncaptured header block stops
// the parser for good.
func TestUncaptured(t *testing.T) {
	var buf bytes.Buffer
	fr := http2.NewFramer(&buf, nil)
	var hb bytes.Buffer
	hpack.NewEncoder(&hb).WriteField(hpack.HeaderField{Name: ":status", Value: "200"})
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
	fr.WriteData(1, true, bytes.Repeat([]byte{'x'}, 5000))
	b := buf.Bytes()

	p := NewParser(false)
	seen := map[uint32]*streamSeen{}
	collect(t, p.Feed(b[:512], len(b), 7), seen)
	if p.Lost() != nil || seen[1] == nil || seen[1].data != 5000 || !seen[1].ended {
		t.Fatalf("lost %v, seen %+v: want 5000 data bytes, ended", p.Lost(), seen[1])
	}

	p = NewParser(false)
	p.Feed(b[:3], len(b), 7)
	if !errors.Is(p.Lost(), ErrHeaderLost) && !errors.Is(p.Lost(), ErrFramingLost) {
		t.Fatalf("a cut frame header or block: lost = %v", p.Lost())
	}
	if evs := p.Feed(b, len(b), 8); evs != nil {
		t.Fatalf("events after losing the stream: %v", evs)
	}
}

func TestNotHTTP2(t *testing.T) {
	p := NewParser(true)
	p.Feed([]byte("GET / HTTP/1.1\r\n\r\n"), 18, 1)
	if !errors.Is(p.Lost(), ErrBadPreface) {
		t.Fatalf("lost = %v, want ErrBadPreface", p.Lost())
	}
}
