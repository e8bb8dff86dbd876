package httpparse

import "bytes"

// Request line and status line parsing.

// parseRequestLine parses "METHOD SP target SP HTTP/1.d". With partial set
// the line was cut by the capture limit: the target and version may be
// missing or cut, and the version then defaults to 1.1.
func parseRequestLine(line []byte, partial bool) (method string, target []byte, minor int, ok bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return "", nil, 0, false
	}
	method = lookupMethod(line[:sp])
	if method == "" {
		return "", nil, 0, false
	}
	rest := line[sp+1:]
	minor = 1
	if sp2 := bytes.IndexByte(rest, ' '); sp2 >= 0 {
		target = rest[:sp2]
		proto := rest[sp2+1:]
		if mi, valid := parseProto(proto); valid {
			minor = mi
		} else if !partial || !protoPrefix(proto) {
			return "", nil, 0, false
		}
	} else {
		if !partial {
			return "", nil, 0, false // HTTP/0.9 or garbage
		}
		target = rest
	}
	if len(target) == 0 && !partial {
		return "", nil, 0, false
	}
	for _, c := range target {
		if !visible(c) {
			return "", nil, 0, false
		}
	}
	return method, target, minor, true
}

// parseStatusLine parses "HTTP/1.d SP ddd [SP reason]". The reason phrase
// is optional and not validated, so a line cut after the code still parses.
func parseStatusLine(line []byte) (minor, code int, ok bool) {
	if len(line) < 12 || line[8] != ' ' {
		return 0, 0, false
	}
	minor, ok = parseProto(line[:8])
	if !ok {
		return 0, 0, false
	}
	for _, c := range line[9:12] {
		if !isDigit(c) {
			return 0, 0, false
		}
		code = code*10 + int(c-'0')
	}
	if code < 100 || (len(line) > 12 && line[12] != ' ') {
		return 0, 0, false
	}
	return minor, code, true
}

// parseProto parses "HTTP/1.d" and returns d.
func parseProto(b []byte) (minor int, ok bool) {
	if len(b) != 8 || string(b[:7]) != "HTTP/1." || !isDigit(b[7]) {
		return 0, false
	}
	return int(b[7] - '0'), true
}

// protoPrefix reports whether b could be the start of "HTTP/1.d".
func protoPrefix(b []byte) bool {
	const p = "HTTP/1."
	if len(b) > len(p) {
		return false
	}
	return string(b) == p[:len(b)]
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
