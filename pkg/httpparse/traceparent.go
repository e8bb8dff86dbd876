package httpparse

// ParseTraceParent parses a W3C Trace Context traceparent header value
// ("00-<32 hex trace-id>-<16 hex parent-id>-<2 hex flags>"). Hex must be
// lower case; all-zero ids and version ff are invalid. Version 00 must be
// exactly 55 characters; a later version is accepted when its first 55
// characters parse and are followed by '-' or the end, as the
// specification asks of parsers that do not know that version. On failure
// every result is zero.
func ParseTraceParent(s string) (traceID [16]byte, spanID [8]byte, flags byte, ok bool) {
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return
	}
	ver, valid := hexByte(s[0], s[1])
	if !valid || ver == 0xff {
		return
	}
	if (ver == 0 && len(s) != 55) || (len(s) > 55 && s[55] != '-') {
		return
	}
	var tid [16]byte
	var sid [8]byte
	for i := range tid {
		if tid[i], valid = hexByte(s[3+2*i], s[4+2*i]); !valid {
			return
		}
	}
	for i := range sid {
		if sid[i], valid = hexByte(s[36+2*i], s[37+2*i]); !valid {
			return
		}
	}
	fl, valid := hexByte(s[53], s[54])
	if !valid || tid == [16]byte{} || sid == [8]byte{} {
		return
	}
	return tid, sid, fl, true
}

// hexByte decodes two lower-case hex digits.
func hexByte(hi, lo byte) (byte, bool) {
	h, l := lowerHex(hi), lowerHex(lo)
	if h < 0 || l < 0 {
		return 0, false
	}
	return byte(h<<4 | l), true
}

func lowerHex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}
