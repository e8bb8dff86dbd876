package httpparse

import (
	"bytes"
	"strings"
)

// Header block parsing: the fields weft needs and the framing headers.

// parseHeadFields fills p.msg from a head. buf may also be a head cut short
// (by the capture limit, the size limit or the stream closing): only
// complete header lines are used, and a start line without its LF is parsed
// as cut. It returns false after handling a bad start line.
func (p *Parser) parseHeadFields(buf []byte) bool {
	m := &p.msg
	line, rest, full := cutLine(buf)
	var target []byte
	var ok bool
	if p.mode == ModeRequest {
		m.IsRequest = true
		m.Method, target, m.ProtoMinor, ok = parseRequestLine(line, !full)
	} else {
		m.ProtoMinor, m.StatusCode, ok = parseStatusLine(line)
	}
	if !ok {
		if p.mode == ModeRequest {
			p.count(ErrBadRequestLine)
		} else {
			p.count(ErrBadStatusLine)
		}
		if !p.started {
			p.setNotHTTP()
		} else {
			p.lost(true)
		}
		return false
	}
	m.ProtoMajor = 1
	p.started = true
	p.open = true

	var host, ua, tp []byte
	var haveHost, haveUA, haveTP, haveCL bool
	var connClose, connKeepAlive bool
	for full {
		line, rest, full = cutLine(rest)
		if !full || len(line) == 0 {
			break // partial last line of a truncated head, or the blank line
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // obsolete line folding: a continuation of a value
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || line[colon-1] == ' ' || line[colon-1] == '\t' {
			p.count(ErrBadHeader)
			continue
		}
		name := line[:colon]
		value := trimOWS(line[colon+1:])
		switch len(name) {
		case 4:
			if !haveHost && equalFold(name, "host") {
				host, haveHost = value, true
			}
		case 6:
			if equalFold(name, "expect") && equalFold(value, "100-continue") {
				m.Expect100 = true
			}
		case 7:
			if equalFold(name, "upgrade") && hasToken(value, "h2c") {
				m.UpgradeH2C = true
			}
		case 10:
			if equalFold(name, "connection") {
				c, k, u := connectionTokens(value)
				connClose = connClose || c
				connKeepAlive = connKeepAlive || k
				p.connUpgrade = p.connUpgrade || u
			} else if !haveUA && equalFold(name, "user-agent") {
				ua, haveUA = value, true
			}
		case 11:
			if !haveTP && equalFold(name, "traceparent") {
				tp, haveTP = value, true
			}
		case 14:
			if equalFold(name, "content-length") {
				n, valid := parseContentLength(value)
				if !valid || (haveCL && n != m.ContentLength) {
					p.clBad = true
				}
				if valid && !haveCL {
					m.ContentLength, haveCL = n, true
				}
			}
		case 17:
			if equalFold(name, "transfer-encoding") {
				// Only the final coding decides the framing.
				last := value
				if i := bytes.LastIndexByte(value, ','); i >= 0 {
					last = trimOWS(value[i+1:])
				}
				p.teSeen = true
				m.Chunked = equalFold(last, "chunked")
			}
		}
	}

	if m.ProtoMinor >= 1 {
		m.KeepAlive = !connClose
	} else {
		m.KeepAlive = connKeepAlive && !connClose
	}

	// One allocation for all strings: they are copied out of buffers the
	// parser reuses.
	if n := len(target) + len(host) + len(ua) + len(tp); n > 0 {
		var sb strings.Builder
		sb.Grow(n)
		sb.Write(target)
		sb.Write(host)
		sb.Write(ua)
		sb.Write(tp)
		s := sb.String()
		i := 0
		m.Target, i = s[i:i+len(target)], i+len(target)
		m.Host, i = s[i:i+len(host)], i+len(host)
		m.UserAgent, i = s[i:i+len(ua)], i+len(ua)
		m.TraceParent = s[i : i+len(tp)]
	}
	return true
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// equalFold compares b with the lower-case ASCII string s, ignoring case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// connectionTokens scans a Connection header value for the tokens that
// matter for framing and persistence.
func connectionTokens(v []byte) (closeTok, keepAlive, upgrade bool) {
	for len(v) > 0 {
		var tok []byte
		tok, v = nextToken(v)
		switch {
		case equalFold(tok, "close"):
			closeTok = true
		case equalFold(tok, "keep-alive"):
			keepAlive = true
		case equalFold(tok, "upgrade"):
			upgrade = true
		}
	}
	return
}

// parseContentLength accepts digits, or a list of identical values as
// RFC 9110 allows ("5, 5").
func parseContentLength(v []byte) (int64, bool) {
	n := int64(-1)
	for len(v) > 0 {
		var tok []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			tok, v = trimOWS(v[:i]), v[i+1:]
		} else {
			tok, v = trimOWS(v), nil
		}
		// 18 digits cannot overflow int64.
		if len(tok) == 0 || len(tok) > 18 {
			return -1, false
		}
		var x int64
		for _, c := range tok {
			if !isDigit(c) {
				return -1, false
			}
			x = x*10 + int64(c-'0')
		}
		if n >= 0 && x != n {
			return -1, false
		}
		n = x
	}
	return n, n >= 0
}

// hasToken reports whether a comma-separated header value lists tok (any case).
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var t []byte
		if t, v = nextToken(v); equalFold(t, tok) {
			return true
		}
	}
	return false
}

// nextToken splits the first element off a comma-separated list.
func nextToken(v []byte) (tok, rest []byte) {
	if i := bytes.IndexByte(v, ','); i >= 0 {
		return trimOWS(v[:i]), v[i+1:]
	}
	return trimOWS(v), nil
}
