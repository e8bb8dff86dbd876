package httpparse

const (
	// MaxHeadBytes bounds the head (start line and headers) the parser
	// buffers. Longer heads are reported as ErrHeaderTooLarge and skipped.
	MaxHeadBytes = 16 << 10
	// MethodQueueLen bounds the methods queued by PushRequestMethod.
	MethodQueueLen = 64

	maxChunkLine    = 4 << 10  // chunk-size line with extensions
	maxTrailerBytes = 16 << 10 // trailer section
	keepBufCap      = 4 << 10  // larger head buffers are freed after use
	keepOutCap      = 64       // larger event slices are freed on the next call
)

type state uint8

const (
	stStart        state = iota // between messages
	stHead                      // head in progress
	stHeadSkip                  // skipping the rest of an oversized head
	stBody                      // Content-Length body
	stCloseBody                 // body delimited by connection close
	stChunkSize                 // chunk-size digits
	stChunkExt                  // rest of the chunk-size line
	stChunkData                 // chunk data
	stChunkDataEnd              // CRLF after chunk data
	stChunkDataLF               // LF of that CRLF
	stTrailer                   // start of a trailer line
	stTrailerLine               // inside a trailer line
	stTrailerLF                 // LF of the final CRLF
	stLost                      // waiting for a segment that starts a message
)

// Parser parses one direction of one connection. It is not safe for
// concurrent use. The zero value is a Parser in ModeDetect.
type Parser struct {
	mode    Mode
	initial Mode // mode given to NewParser, restored by Close
	state   state
	notHTTP bool
	started bool // a start line was parsed: the stream is HTTP
	startOK bool // the buffered head starts like a message

	ts      uint64 // ts of the segment being fed
	head    []byte // partial head, at most maxHead bytes
	maxHead int    // MaxHeadBytes; the fuzz test lowers it to reach the limit cheaply
	out     []Message

	msg         Message // message in progress
	open        bool    // msg has a parsed start line and no terminal event yet
	headPending bool    // msg's PhaseHead event is due at the end of Feed
	dead        bool    // msg was reported aborted; its remaining bytes are skipped silently
	lazy        bool    // msg's framing is unknown: it ends at the next message or Close
	lazyChunked bool    // lazy msg is chunked: a captured last-chunk ends it
	lostAfter   bool    // after msg, wait for a segment starting a message (tunnel, cut head)
	lostMsgs    bool    // sync was lost in a way that may have dropped messages
	lastTS      uint64  // ts of the last segment attributed to a lazy msg

	// Framing facts from the head being parsed.
	teSeen      bool
	clBad       bool
	connUpgrade bool

	remaining   int64 // Content-Length body or chunk data bytes left; chunk size being read
	chunkDigits uint8
	lineLen     int   // bytes of a chunk-size line or of the trailer section
	skipNL      uint8 // blank-line scanner state while skipping an oversized head

	methods [MethodQueueLen]uint8
	mHead   int
	mLen    int
	errs    ErrorCounts
	lastErr Error
}

// NewParser returns a Parser for a stream whose first byte is the start of
// a message. See StartMidStream for streams joined later.
func NewParser(mode Mode) *Parser {
	if mode > ModeResponse {
		mode = ModeDetect
	}
	return &Parser{mode: mode, initial: mode, maxHead: MaxHeadBytes}
}

// Mode returns the parser's mode; for ModeDetect it becomes ModeRequest or
// ModeResponse once the first message was recognised.
func (p *Parser) Mode() Mode { return p.mode }

// NotHTTP reports whether the stream was found not to be HTTP/1.x. Feed then
// ignores all input at no cost and the caller may drop the stream.
func (p *Parser) NotHTTP() bool { return p.notHTTP }

// StartMidStream tells the parser, before the first Feed, that capture
// began after the connection was already in use: instead of deciding
// NotHTTP from the first bytes, it waits for a segment that begins with a
// valid request or status line.
func (p *Parser) StartMidStream() { p.state = stLost }

// Feed consumes one segment: captured holds the first bytes of a syscall
// that transferred total bytes (total < len(captured) is taken as
// len(captured)); ts is the segment's timestamp and should be non-zero.
//
// It returns the events of this segment in stream order: a PhaseHead event
// for a message whose head was parsed here and whose body is still pending,
// and a terminal event (PhaseDone or PhaseAborted) for every message that
// ended here. The returned slice is reused: it is valid until the next Feed
// or Close.
func (p *Parser) Feed(captured []byte, total int, ts uint64) []Message {
	if p.notHTTP {
		return nil
	}
	p.resetOut()
	if p.maxHead == 0 {
		p.maxHead = MaxHeadBytes // zero value Parser
	}
	if total < len(captured) {
		total = len(captured)
	}
	if total == 0 {
		return p.out
	}
	p.ts = ts
	if p.state == stLost && !p.tryResync(captured, total) {
		return p.out
	}
	data := captured
	for len(data) > 0 && p.state != stLost {
		data = data[p.step(data):]
		if p.notHTTP {
			return nil
		}
	}
	if gap := int64(total - len(captured)); gap > 0 {
		p.skip(gap)
	}
	if p.headPending {
		p.headPending = false
		p.emit(PhaseHead, nil)
	}
	return p.out
}

// Close reports the end of the stream at ts. It completes a message
// delimited by the connection closing (EndTS = ts) and a message whose end
// was being estimated (EndTS = its last segment's ts), and reports any other
// message in progress as PhaseAborted with ErrIncomplete. The Parser is then
// reset for a new stream; error counters are kept. The returned slice is
// valid until the next Feed or Close.
func (p *Parser) Close(ts uint64) []Message {
	p.resetOut()
	if !p.notHTTP {
		p.ts = ts
		switch {
		case p.lazy:
			p.finish(p.lastTS)
		case p.open && !p.dead && p.state == stCloseBody:
			p.finish(ts)
		case p.open && !p.dead:
			p.abort(ErrIncomplete)
		case !p.open && p.state == stHead && p.startOK && len(p.head) > 0:
			p.count(ErrIncomplete)
			if p.parseHeadFields(p.head) {
				p.msg.HeadTruncated = true
				p.msg.HeadTS = ts
				p.emit(PhaseAborted, ErrIncomplete)
			}
		}
	}
	out := p.out
	*p = Parser{mode: p.initial, initial: p.initial, maxHead: p.maxHead, head: p.head[:0], out: out, errs: p.errs, lastErr: p.lastErr}
	p.releaseHead()
	if len(out) == 0 {
		return nil
	}
	return out
}

func (p *Parser) resetOut() {
	if cap(p.out) > keepOutCap {
		p.out = nil
	} else {
		p.out = p.out[:0]
	}
}

// step consumes bytes of captured data in the current state. It consumes at
// least one byte unless it changes state.
func (p *Parser) step(data []byte) int {
	switch p.state {
	case stStart:
		i := 0
		for i < len(data) && (data[i] == '\r' || data[i] == '\n') {
			i++
		}
		if i < len(data) {
			p.beginMessage()
		}
		return i
	case stHead:
		return p.headBytes(data)
	case stHeadSkip:
		return p.skipHead(data)
	case stBody:
		n := min(int64(len(data)), p.remaining)
		p.msg.BodyBytes += n
		p.remaining -= n
		if p.remaining == 0 {
			p.finish(p.ts)
		}
		return int(n)
	case stCloseBody:
		p.msg.BodyBytes += int64(len(data))
		return len(data)
	case stLost:
		return len(data)
	}
	return p.chunkStep(data)
}

// tryResync is called for each segment while sync is lost. It returns true
// when the segment starts a message and parsing should resume.
func (p *Parser) tryResync(captured []byte, total int) bool {
	if resyncStart(captured, p.mode) {
		if p.lazy {
			p.finish(p.lastTS)
		}
		if p.lostMsgs && p.mode != ModeRequest {
			// Responses were lost; in the common non-pipelined case this
			// one answers the newest request.
			p.keepNewestMethod()
		}
		p.lostMsgs = false
		p.started = true
		p.state = stStart
		return true
	}
	if p.lazy {
		p.msg.BodyBytes += int64(total)
		p.lastTS = p.ts
		if p.lazyChunked && len(captured) == total && endsWithLastChunk(captured) {
			p.finish(p.ts)
		}
	}
	return false
}

// beginMessage starts a new message at the current byte.
func (p *Parser) beginMessage() {
	p.msg = Message{StartTS: p.ts, ContentLength: -1}
	p.state = stHead
	p.startOK = false
	p.open, p.headPending, p.dead, p.lazy, p.lazyChunked, p.lostAfter = false, false, false, false, false, false
	p.teSeen, p.clBad, p.connUpgrade = false, false, false
	p.remaining = 0
}

// finish completes the message at end.
func (p *Parser) finish(end uint64) {
	p.msg.EndTS = end
	p.msg.Complete = true
	p.emit(PhaseDone, nil)
	next := stStart
	if p.lostAfter || p.lazy {
		next = stLost
	}
	p.open, p.headPending, p.dead, p.lazy = false, false, false, false
	p.state = next
}

// abort reports the open message as aborted and loses sync.
func (p *Parser) abort(e Error) {
	p.count(e)
	if p.open {
		p.emit(PhaseAborted, e)
	}
	p.lost(true)
}

// lost drops the message in progress and waits for a segment that starts
// a message. dropped records that whole messages may go unseen meanwhile.
func (p *Parser) lost(dropped bool) {
	p.state = stLost
	p.open, p.headPending, p.dead, p.lazy = false, false, false, false
	if dropped {
		p.lostMsgs = true
	}
	p.releaseHead()
}

func (p *Parser) setNotHTTP() {
	p.notHTTP = true
	p.head = nil
	p.out = nil
}

func (p *Parser) emit(ph Phase, err error) {
	if p.dead {
		return
	}
	m := p.msg
	m.Phase = ph
	m.Err = err
	if ph != PhaseDone {
		m.Complete = false
		m.EndTS = 0
	}
	p.out = append(p.out, m)
}

func (p *Parser) releaseHead() {
	if cap(p.head) > keepBufCap {
		p.head = nil
	} else {
		p.head = p.head[:0]
	}
}
