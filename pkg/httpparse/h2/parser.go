package h2

import (
	"errors"
	"fmt"

	"golang.org/x/net/http2/hpack"
)

// Limits that keep one connection's state bounded.
const (
	// MaxHeaderBlock is the longest header block (HEADERS plus its
	// CONTINUATIONs, padding included) the parser assembles; a longer one
	// loses the connection.
	MaxHeaderBlock = 16 << 10
	// MaxDynamicTable bounds the HPACK dynamic table a peer may use
	// (SETTINGS_HEADER_TABLE_SIZE is 4096 unless a peer raises it).
	MaxDynamicTable = 64 << 10
	maxStringLength = 8 << 10
)

// Kind says what an Event reports.
type Kind uint8

const (
	KindHeaders Kind = 1 // a complete header block (request, response or trailers)
	KindData    Kind = 2 // a DATA frame
	KindReset   Kind = 3 // RST_STREAM
	KindGoAway  Kind = 4 // GOAWAY: streams above LastStreamID were not processed
)

// Event is one thing that happened on a stream, in wire order.
type Event struct {
	Kind      Kind
	StreamID  uint32
	TS        uint64 // of the segment that completed the frame
	EndStream bool
	// Fields of a header block: the pseudo-headers and the names in kept.
	Fields []hpack.HeaderField
	// DataBytes is a DATA frame's payload length (padding included).
	DataBytes int
	// ErrCode of RST_STREAM or GOAWAY; LastStreamID of GOAWAY.
	ErrCode      uint32
	LastStreamID uint32
}

// Why a parser stopped.
var (
	ErrBadPreface     = errors.New("h2: stream does not open with the client preface")
	ErrFramingLost    = errors.New("h2: a frame header was not captured")
	ErrHeaderLost     = errors.New("h2: part of a header block was not captured (HPACK state lost)")
	ErrHeaderTooLarge = errors.New("h2: header block over the size limit")
	ErrProtocol       = errors.New("h2: protocol error")
)

// kept are the regular header names reported besides pseudo-headers.
var kept = map[string]bool{
	"traceparent": true, "tracestate": true, "content-type": true, "content-length": true,
	"user-agent": true, "grpc-status": true, "grpc-message": true,
}

// Parser follows one direction of one HTTP/2 connection.
type Parser struct {
	preface int // bytes of the client preface still expected (client direction)
	// elided: segments hold the frames with the payloads the parser does
	// not decode left out (the kernel's HTTP/2 copy, see FeedFrames).
	elided bool

	hdr  [frameHeaderLen]byte
	hdrN int
	cur  frameHeader
	left uint32 // payload bytes of cur still to come
	in   bool   // inside cur's payload

	// The HEADERS frame being collected (whole payload, to strip padding
	// and priority), then the block assembled across CONTINUATIONs.
	payload     []byte
	block       []byte
	blockStream uint32
	blockEnd    bool // END_STREAM of the HEADERS that opened the block
	blockPush   bool // the block is a PUSH_PROMISE's: decoded, not reported
	inBlock     bool

	dec    *hpack.Decoder
	fields []hpack.HeaderField
	out    []Event
	lost   error
}

// NewParser returns a parser for the client's direction when client is
// true (it must open with ClientPreface), else for the server's.
func NewParser(client bool) *Parser {
	p := &Parser{}
	if client {
		p.preface = len(ClientPreface)
	}
	p.dec = hpack.NewDecoder(4096, func(f hpack.HeaderField) {
		if f.IsPseudo() || kept[f.Name] {
			p.fields = append(p.fields, f)
		}
	})
	p.dec.SetAllowedMaxDynamicTableSize(MaxDynamicTable)
	p.dec.SetMaxStringLength(maxStringLength)
	return p
}

// NewFramesParser is NewParser for FeedFrames.
func NewFramesParser(client bool) *Parser {
	p := NewParser(client)
	p.elided = true
	return p
}

// FeedFrames parses one segment of the stream with the payloads of every
// frame but HEADERS, CONTINUATION, PUSH_PROMISE, RST_STREAM and GOAWAY
// left out (what the kernel copies of an HTTP/2 connection): a DATA
// frame is counted from its header alone. Only for NewFramesParser.
func (p *Parser) FeedFrames(frames []byte, ts uint64) []Event {
	return p.Feed(frames, len(frames), ts)
}

// Lose stops the parser for good, for a reason found outside the stream
// (the kernel lost the connection's framing).
func (p *Parser) Lose(err error) {
	if p.lost == nil {
		p.lose(err)
	}
}

// Lost is why the parser stopped, nil while it follows the stream.
func (p *Parser) Lost() error { return p.lost }

// Feed parses one segment. The returned events are valid until the next call.
func (p *Parser) Feed(captured []byte, total int, ts uint64) []Event {
	p.out = p.out[:0]
	if p.lost != nil {
		return nil
	}
	b := captured
	for len(b) > 0 && p.lost == nil {
		b = p.step(b, ts)
	}
	if uncaptured := total - len(captured); uncaptured > 0 && p.lost == nil {
		p.skip(uncaptured, ts)
	}
	return p.out
}

// step consumes a prefix of b and returns the rest.
func (p *Parser) step(b []byte, ts uint64) []byte {
	if p.preface > 0 {
		off := len(ClientPreface) - p.preface
		n := min(p.preface, len(b))
		if string(b[:n]) != ClientPreface[off:off+n] {
			p.lose(ErrBadPreface)
			return nil
		}
		p.preface -= n
		return b[n:]
	}
	if !p.in {
		n := copy(p.hdr[p.hdrN:], b)
		p.hdrN += n
		if p.hdrN < frameHeaderLen {
			return b[n:]
		}
		p.hdrN = 0
		p.begin(parseFrameHeader(p.hdr[:]), ts)
		return b[n:]
	}
	n := min(int(p.left), len(b))
	if p.collecting() {
		p.payload = append(p.payload, b[:n]...)
	}
	p.left -= uint32(n)
	if p.left == 0 {
		p.end(ts)
	}
	return b[n:]
}

// skip passes over n bytes that were moved but not captured.
func (p *Parser) skip(n int, ts uint64) {
	if p.preface > 0 || !p.in || uint32(n) > p.left {
		p.lose(ErrFramingLost)
		return
	}
	if p.collecting() {
		p.lose(ErrHeaderLost)
		return
	}
	p.left -= uint32(n)
	if p.left == 0 {
		p.end(ts)
	}
}

// collecting reports whether cur's payload is kept (rather than counted).
func (p *Parser) collecting() bool {
	switch p.cur.typ {
	case FrameHeaders, FrameContinuation, FrameRSTStream, FrameGoAway, FramePushPromise:
		return true
	}
	return false
}

func (p *Parser) begin(h frameHeader, ts uint64) {
	if p.inBlock && h.typ != FrameContinuation {
		p.lose(fmt.Errorf("%w: %d frame inside a header block", ErrProtocol, h.typ))
		return
	}
	if h.length > MaxHeaderBlock && (h.typ == FrameHeaders || h.typ == FrameContinuation || h.typ == FramePushPromise) {
		p.lose(ErrHeaderTooLarge)
		return
	}
	p.cur, p.left, p.in = h, h.length, true
	p.payload = p.payload[:0]
	if p.elided && !p.collecting() {
		p.left = 0 // the payload was left out of the segment
	}
	if p.left == 0 {
		p.end(ts)
	}
}

// end handles a frame whose payload has been read (or counted).
func (p *Parser) end(ts uint64) {
	p.in = false
	h := p.cur
	switch h.typ {
	case FrameData:
		p.out = append(p.out, Event{Kind: KindData, StreamID: h.streamID, TS: ts,
			EndStream: h.flags&flagEndStream != 0, DataBytes: int(h.length)})
	case FrameHeaders:
		frag, ok := headerFragment(h, p.payload)
		if !ok {
			p.lose(fmt.Errorf("%w: HEADERS padding or priority past its payload", ErrProtocol))
			return
		}
		p.block = append(p.block[:0], frag...)
		p.blockStream, p.blockEnd, p.blockPush, p.inBlock = h.streamID, h.flags&flagEndStream != 0, false, true
		if h.flags&flagEndHeaders != 0 {
			p.decodeBlock(ts)
		}
	case FrameContinuation:
		if !p.inBlock || h.streamID != p.blockStream {
			p.lose(fmt.Errorf("%w: CONTINUATION without its HEADERS", ErrProtocol))
			return
		}
		if len(p.block)+len(p.payload) > MaxHeaderBlock {
			p.lose(ErrHeaderTooLarge)
			return
		}
		p.block = append(p.block, p.payload...)
		if h.flags&flagEndHeaders != 0 {
			p.decodeBlock(ts)
		}
	case FramePushPromise:
		// Its block updates the HPACK table like any other; the promised
		// stream is not followed.
		frag, ok := pushPromiseFragment(h, p.payload)
		if !ok {
			p.lose(fmt.Errorf("%w: PUSH_PROMISE shorter than its fields", ErrProtocol))
			return
		}
		p.block = append(p.block[:0], frag...)
		p.blockStream, p.blockEnd, p.blockPush, p.inBlock = h.streamID, false, true, true
		if h.flags&flagEndHeaders != 0 {
			p.decodeBlock(ts)
		}
	case FrameRSTStream:
		if len(p.payload) == 4 {
			p.out = append(p.out, Event{Kind: KindReset, StreamID: h.streamID, TS: ts, ErrCode: be32(p.payload)})
		}
	case FrameGoAway:
		if len(p.payload) >= 8 {
			p.out = append(p.out, Event{Kind: KindGoAway, TS: ts,
				LastStreamID: be32(p.payload) & 0x7fffffff, ErrCode: be32(p.payload[4:])})
		}
	}
}

func (p *Parser) decodeBlock(ts uint64) {
	p.inBlock = false
	p.fields = nil
	// Write and Close, not DecodeFull, which would replace the filtering emit function.
	if _, err := p.dec.Write(p.block); err != nil {
		p.lose(fmt.Errorf("%w: hpack: %v", ErrProtocol, err))
		return
	}
	if err := p.dec.Close(); err != nil {
		p.lose(fmt.Errorf("%w: hpack: %v", ErrProtocol, err))
		return
	}
	if p.blockPush {
		return
	}
	p.out = append(p.out, Event{Kind: KindHeaders, StreamID: p.blockStream, TS: ts, EndStream: p.blockEnd, Fields: p.fields})
}

func (p *Parser) lose(err error) {
	p.lost = err
	p.payload, p.block, p.fields = nil, nil, nil
}

// headerFragment strips a HEADERS payload's padding and priority fields.
func headerFragment(h frameHeader, b []byte) ([]byte, bool) {
	pad := 0
	if h.flags&flagPadded != 0 {
		if len(b) < 1 {
			return nil, false
		}
		pad, b = int(b[0]), b[1:]
	}
	if h.flags&flagPriority != 0 {
		if len(b) < 5 {
			return nil, false
		}
		b = b[5:]
	}
	if pad > len(b) {
		return nil, false
	}
	return b[:len(b)-pad], true
}

func pushPromiseFragment(h frameHeader, b []byte) ([]byte, bool) {
	pad := 0
	if h.flags&flagPadded != 0 {
		if len(b) < 1 {
			return nil, false
		}
		pad, b = int(b[0]), b[1:]
	}
	if len(b) < 4 || pad > len(b)-4 {
		return nil, false
	}
	return b[4 : len(b)-pad], true
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
