package httpparse

// Start-of-message recognition. It decides from a handful of bytes whether a
// stream is HTTP/1.x so that TLS, HTTP/2, Redis, PostgreSQL and other binary
// protocols are rejected after one cheap look.

type startKind uint8

const (
	startNo       startKind = iota // cannot be the start of a message
	startMaybe                     // a valid prefix, more bytes needed
	startRequest                   // a request line starts here
	startResponse                  // a status line starts here
)

// Candidates by first byte, so most non-HTTP input is rejected by a switch.
var (
	methodsC = []string{"CONNECT"}
	methodsD = []string{"DELETE"}
	methodsG = []string{"GET"}
	methodsH = []string{"HEAD"}
	methodsO = []string{"OPTIONS"}
	methodsP = []string{"POST", "PUT", "PATCH"}
	methodsT = []string{"TRACE"}
)

func methodCandidates(c byte) []string {
	switch c {
	case 'C':
		return methodsC
	case 'D':
		return methodsD
	case 'G':
		return methodsG
	case 'H':
		return methodsH
	case 'O':
		return methodsO
	case 'P':
		return methodsP
	case 'T':
		return methodsT
	}
	return nil
}

// lookupMethod returns the interned method name, "" if b is not one of the
// recognised methods. Interning keeps Message.Method allocation free.
func lookupMethod(b []byte) string {
	switch string(b) {
	case "GET":
		return "GET"
	case "HEAD":
		return "HEAD"
	case "POST":
		return "POST"
	case "PUT":
		return "PUT"
	case "DELETE":
		return "DELETE"
	case "CONNECT":
		return "CONNECT"
	case "OPTIONS":
		return "OPTIONS"
	case "TRACE":
		return "TRACE"
	case "PATCH":
		return "PATCH"
	}
	return ""
}

// visible reports whether c may appear in a request-target.
func visible(c byte) bool { return c > ' ' && c != 0x7f }

// checkRequestStart looks for "METHOD SP <visible>".
func checkRequestStart(b []byte) startKind {
	if len(b) == 0 {
		return startMaybe
	}
	res := startNo
	for _, m := range methodCandidates(b[0]) {
		n := len(m)
		if len(b) <= n {
			if string(b) == m[:len(b)] {
				res = startMaybe
			}
			continue
		}
		if string(b[:n]) != m || b[n] != ' ' {
			continue
		}
		if len(b) == n+1 {
			return startMaybe
		}
		if visible(b[n+1]) {
			return startRequest
		}
		return startNo
	}
	return res
}

// checkResponseStart looks for "HTTP/1.<digit>"; the rest of the status
// line is validated when the line is parsed, so a malformed one is counted
// as an error rather than silently treated as non-HTTP.
func checkResponseStart(b []byte) startKind {
	const prefix = "HTTP/1."
	n := min(len(b), len(prefix))
	if string(b[:n]) != prefix[:n] {
		return startNo
	}
	if len(b) <= len(prefix) {
		return startMaybe
	}
	if !isDigit(b[len(prefix)]) {
		return startNo
	}
	return startResponse
}

// checkStart classifies b as the possible start of a message for mode.
func checkStart(b []byte, mode Mode) startKind {
	req, resp := startNo, startNo
	if mode != ModeResponse {
		req = checkRequestStart(b)
		if req == startRequest {
			return req
		}
	}
	if mode != ModeRequest {
		resp = checkResponseStart(b)
		if resp == startResponse {
			return resp
		}
	}
	if req == startMaybe || resp == startMaybe {
		return startMaybe
	}
	return startNo
}

// skipCRLF drops the empty lines a peer may send between messages.
func skipCRLF(b []byte) []byte {
	i := 0
	for i < len(b) && (b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return b[i:]
}

// resyncStart reports whether a segment starting with b can be taken as the
// start of a message after sync was lost. It is stricter than checkStart:
// when the first line is captured in full it must parse, because a body
// that happens to begin with "GET " must not restart parsing.
func resyncStart(b []byte, mode Mode) bool {
	b = skipCRLF(b)
	k := checkStart(b, mode)
	if k != startRequest && k != startResponse {
		return false
	}
	line, _, full := cutLine(b)
	if !full {
		return true
	}
	if k == startRequest {
		_, _, _, ok := parseRequestLine(line, false)
		return ok
	}
	_, _, ok := parseStatusLine(line)
	return ok
}
