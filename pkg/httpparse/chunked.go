package httpparse

import "bytes"

// Chunked transfer coding (RFC 9112 section 7.1), parsed byte-incrementally
// so chunk-size lines and trailers may be split across segments anywhere.

// newChunkLine prepares for a chunk-size line.
func (p *Parser) newChunkLine() {
	p.state = stChunkSize
	p.remaining = 0
	p.chunkDigits = 0
	p.lineLen = 0
}

// chunkLineDone acts on a complete chunk-size line.
func (p *Parser) chunkLineDone() {
	if p.remaining == 0 {
		p.state = stTrailer // last-chunk
		p.lineLen = 0
		return
	}
	p.state = stChunkData
}

// chunkStep consumes bytes in one of the chunked states. Like step it
// consumes at least one byte unless it changes state.
func (p *Parser) chunkStep(data []byte) int {
	switch p.state {
	case stChunkSize:
		i := 0
		for ; i < len(data); i++ {
			v := unhex(data[i])
			if v < 0 {
				break
			}
			// 15 hex digits keep the size within int64.
			if p.chunkDigits == 15 {
				p.abort(ErrBadChunk)
				return i
			}
			p.remaining = p.remaining<<4 | int64(v)
			p.chunkDigits++
		}
		if i == len(data) {
			return i
		}
		if p.chunkDigits == 0 {
			p.abort(ErrBadChunk)
			return i
		}
		switch data[i] {
		case ';', ' ', '\t', '\r':
			p.state = stChunkExt
		case '\n':
			p.chunkLineDone()
		default:
			p.abort(ErrBadChunk)
			return i
		}
		return i + 1
	case stChunkExt:
		j := bytes.IndexByte(data, '\n')
		n := j
		if j < 0 {
			n = len(data)
		}
		p.lineLen += n
		if p.lineLen > maxChunkLine {
			p.abort(ErrBadChunk)
			return n
		}
		if j < 0 {
			return n
		}
		p.chunkLineDone()
		return j + 1
	case stChunkData:
		n := min(int64(len(data)), p.remaining)
		p.msg.BodyBytes += n
		p.remaining -= n
		if p.remaining == 0 {
			p.state = stChunkDataEnd
		}
		return int(n)
	case stChunkDataEnd:
		switch data[0] {
		case '\r':
			p.state = stChunkDataLF
		case '\n':
			p.newChunkLine()
		default:
			p.abort(ErrBadChunk)
			return 0
		}
		return 1
	case stChunkDataLF:
		if data[0] != '\n' {
			p.abort(ErrBadChunk)
			return 0
		}
		p.newChunkLine()
		return 1
	case stTrailer:
		switch data[0] {
		case '\r':
			p.state = stTrailerLF
		case '\n':
			p.finish(p.ts)
		default:
			p.state = stTrailerLine
			p.lineLen++
		}
		return 1
	case stTrailerLine:
		j := bytes.IndexByte(data, '\n')
		n := j + 1
		if j < 0 {
			n = len(data)
		}
		p.lineLen += n
		if p.lineLen > maxTrailerBytes {
			p.abort(ErrBadChunk)
			return n
		}
		if j >= 0 {
			p.state = stTrailer
		}
		return n
	case stTrailerLF:
		if data[0] != '\n' {
			p.abort(ErrBadChunk)
			return 0
		}
		p.finish(p.ts)
		return 1
	}
	// Unreachable: every state is handled by step or above. Losing sync
	// keeps the parser safe should that ever change.
	p.lost(true)
	return len(data)
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// endsWithLastChunk reports whether a fully captured segment ends a chunked
// body, for messages whose chunk framing was lost.
func endsWithLastChunk(b []byte) bool {
	return string(b) == "0\r\n\r\n" || bytes.HasSuffix(b, []byte("\r\n0\r\n\r\n"))
}
