package httpparse

// Body framing: how a message is delimited, including estimates for bytes
// that were transferred but not captured.

// skip accounts for gap bytes that were transferred but not captured.
func (p *Parser) skip(gap int64) {
	for gap > 0 {
		switch p.state {
		case stStart:
			// The next message starts in bytes we cannot see.
			p.count(ErrCaptureGap)
			p.lost(true)
			return
		case stHead:
			if !p.startOK || len(p.head) == 0 {
				p.count(ErrCaptureGap)
				p.lost(true)
				return
			}
			ok := p.parseHeadFields(p.head)
			p.releaseHead()
			if !ok {
				return
			}
			p.msg.HeadTS = p.ts
			if p.frameCut() {
				return
			}
		case stHeadSkip:
			// The end of the oversized head is not visible, nor is where
			// the next message starts.
			p.lost(true)
			return
		case stBody:
			n := min(gap, p.remaining)
			p.msg.BodyBytes += n
			p.remaining -= n
			gap -= n
			if p.remaining == 0 {
				p.finish(p.ts)
			}
		case stCloseBody:
			p.msg.BodyBytes += gap
			return
		case stChunkData:
			n := min(gap, p.remaining)
			p.msg.BodyBytes += n
			p.remaining -= n
			gap -= n
			if p.remaining == 0 {
				p.state = stChunkDataEnd
			}
		case stChunkDataEnd:
			// Assume the uncaptured CRLF is well formed.
			if gap >= 2 {
				gap -= 2
				p.newChunkLine()
			} else {
				gap = 0
				p.state = stChunkDataLF
			}
		case stChunkDataLF:
			gap--
			p.newChunkLine()
		case stLost:
			if p.lazy {
				p.msg.BodyBytes += gap
			}
			return
		default:
			// A chunk-size line or trailer was not captured.
			p.count(ErrCaptureGap)
			if p.dead {
				p.lost(true)
				return
			}
			p.enterLazy(true)
			p.msg.BodyBytes += gap
			return
		}
	}
}

// frame decides how the body of the message whose head was just parsed is
// delimited (RFC 9112 section 6.3).
func (p *Parser) frame() {
	m := &p.msg
	if !m.IsRequest && p.bodylessResponse() {
		p.finish(p.ts)
		return
	}
	if m.IsRequest && (m.Method == "CONNECT" || p.connUpgrade) {
		// What follows may be another protocol; resume only at a
		// segment that starts a request.
		p.lostAfter = true
	}
	if m.IsRequest && m.Method == "CONNECT" {
		// A CONNECT request has no content (RFC 9110, section 9.3.6),
		// whatever its framing headers say: the bytes after its head
		// are the tunnel's.
		p.finish(p.ts)
		return
	}
	switch {
	case p.teSeen && m.Chunked:
		p.newChunkLine()
		p.headPending = true
	case p.teSeen:
		if m.IsRequest {
			p.abort(ErrBadTransferEncoding)
			return
		}
		p.closeDelimited()
	case p.clBad:
		p.abort(ErrBadContentLength)
	case m.ContentLength > 0:
		p.state = stBody
		p.remaining = m.ContentLength
		p.headPending = true
	case m.ContentLength == 0 || m.IsRequest:
		p.finish(p.ts)
	default:
		p.closeDelimited()
	}
}

// frameCut frames a message whose head was cut by the capture limit, with
// the estimates described in the package documentation. It returns true
// when the rest of the segment's gap is accounted for.
func (p *Parser) frameCut() bool {
	m := &p.msg
	m.HeadTruncated = true
	p.count(ErrHeadTruncated)
	p.lostAfter = true
	if !m.IsRequest && p.bodylessResponse() {
		p.finish(p.ts)
		return true
	}
	switch {
	case p.teSeen && m.Chunked:
		p.headPending = true
		p.enterLazy(true)
	case p.teSeen && m.IsRequest:
		p.abort(ErrBadTransferEncoding)
	case p.clBad:
		p.abort(ErrBadContentLength)
	case p.teSeen || (m.ContentLength < 0 && !m.IsRequest):
		p.headPending = true
		p.enterLazy(false)
	case m.ContentLength <= 0:
		p.finish(p.ts)
	default:
		p.state = stBody
		p.remaining = m.ContentLength
		p.headPending = true
		// The client waits for 100 Continue before sending the body, so
		// the head fills its segment.
		return m.Expect100
	}
	return true
}

// bodylessResponse classifies the response status, consuming the queued
// request method for a final response.
func (p *Parser) bodylessResponse() bool {
	code := p.msg.StatusCode
	if code < 200 && code != 101 {
		p.msg.Interim = true
		return true
	}
	meth := p.popMethod()
	switch {
	case code == 101, meth == methConnect && code < 300:
		// The connection now carries another protocol.
		p.lostAfter = true
		return true
	case meth == methHead, code == 204, code == 304:
		return true
	}
	return false
}

func (p *Parser) closeDelimited() {
	if p.dead {
		// The framing headers may have been in the skipped part.
		p.lost(false)
		return
	}
	p.msg.KeepAlive = false
	p.state = stCloseBody
	p.headPending = true
}

// enterLazy keeps the message open with unknown framing: it is completed
// by tryResync or Close.
func (p *Parser) enterLazy(chunked bool) {
	p.lazy = true
	p.lazyChunked = chunked
	p.lastTS = p.ts
	p.state = stLost
}
