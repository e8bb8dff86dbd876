package httpparse

import "bytes"

// Head (start line and header block) buffering: finding where a head ends,
// possibly across segments, and skipping heads that are too large.

// headBytes consumes bytes of a head in progress. The common case, a head
// that is complete within one segment, is parsed in place without copying.
func (p *Parser) headBytes(data []byte) int {
	if len(p.head) == 0 {
		if !p.checkMessageStart(data) {
			return len(data)
		}
		end := headEnd(data, 0)
		if end > 0 && end <= p.maxHead {
			p.headDone(data[:end])
			return end
		}
		if len(data) >= p.maxHead {
			p.headTooLarge(data[:p.maxHead])
			return p.maxHead
		}
		p.head = append(p.head, data...)
		return len(data)
	}
	old := len(p.head)
	take := min(len(data), p.maxHead-old)
	p.head = append(p.head, data[:take]...)
	if !p.startOK && !p.checkMessageStart(p.head) {
		return len(data)
	}
	// Back up 3 bytes: the blank line may straddle the segment boundary.
	if end := headEnd(p.head, max(0, old-3)); end > 0 {
		n := end - old
		p.headDone(p.head[:end])
		p.releaseHead()
		return n
	}
	if len(p.head) >= p.maxHead {
		p.headTooLarge(p.head)
		p.releaseHead()
	}
	return take
}

// checkMessageStart vets the first bytes of a message. It returns false when
// they cannot start one, after marking the stream not-HTTP (if nothing was
// parsed on it yet) or losing sync.
func (p *Parser) checkMessageStart(b []byte) bool {
	switch checkStart(b, p.mode) {
	case startRequest:
		p.mode = ModeRequest
		p.startOK = true
	case startResponse:
		p.mode = ModeResponse
		p.startOK = true
	case startNo:
		if !p.started {
			p.setNotHTTP()
			return false
		}
		if p.mode == ModeResponse {
			p.count(ErrBadStatusLine)
		} else {
			p.count(ErrBadRequestLine)
		}
		p.lost(true)
		return false
	}
	return true
}

// headEnd returns the offset just past the blank line ending the head, or
// -1. Bare LF line endings are accepted as many servers send them.
func headEnd(b []byte, from int) int {
	for i := from; i < len(b); {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return -1
		}
		k := i + j + 1
		if k < len(b) {
			if b[k] == '\n' {
				return k + 1
			}
			if b[k] == '\r' && k+1 < len(b) && b[k+1] == '\n' {
				return k + 2
			}
		}
		i = k
	}
	return -1
}

// headDone handles a complete head.
func (p *Parser) headDone(buf []byte) {
	if !p.parseHeadFields(buf) {
		return
	}
	p.msg.HeadTS = p.ts
	p.frame()
}

// headTooLarge reports the message with what its first MaxHeadBytes held and
// then skips the rest of its head; the framing headers seen so far are used
// to skip its body too.
func (p *Parser) headTooLarge(buf []byte) {
	p.count(ErrHeaderTooLarge)
	p.skipNL = tailNL(buf)
	if !p.parseHeadFields(buf) {
		return
	}
	p.msg.HeadTruncated = true
	p.msg.HeadTS = p.ts
	p.emit(PhaseAborted, ErrHeaderTooLarge)
	p.dead = true
	p.state = stHeadSkip
}

// tailNL returns the blank-line scanner state after buf: 1 after "\n",
// 2 after "\n\r", 0 otherwise.
func tailNL(buf []byte) uint8 {
	n := len(buf)
	switch {
	case n >= 1 && buf[n-1] == '\n':
		return 1
	case n >= 2 && buf[n-1] == '\r' && buf[n-2] == '\n':
		return 2
	}
	return 0
}

// skipHead discards the rest of an oversized head, looking for its end.
func (p *Parser) skipHead(data []byte) int {
	for i := 0; i < len(data); {
		switch p.skipNL {
		case 0:
			j := bytes.IndexByte(data[i:], '\n')
			if j < 0 {
				return len(data)
			}
			i += j + 1
			p.skipNL = 1
		case 1:
			c := data[i]
			i++
			switch c {
			case '\n':
				p.frame()
				return i
			case '\r':
				p.skipNL = 2
			default:
				p.skipNL = 0
			}
		default:
			c := data[i]
			i++
			if c == '\n' {
				p.frame()
				return i
			}
			p.skipNL = 0
		}
	}
	return len(data)
}

// cutLine splits b at the first LF, dropping a CR before it. found is false
// when b holds no LF (line is then all of b).
func cutLine(b []byte) (line, rest []byte, found bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil, false
	}
	line = b[:i]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, b[i+1:], true
}
