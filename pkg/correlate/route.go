package correlate

import "strings"

// Route turns a path into a low-cardinality template for span names:
// segments that look like identifiers (numbers, UUIDs, long hex or
// mixed letter-digit tokens) become "{id}". weft cannot see the
// framework's routes, so this keeps span names groupable without
// claiming to be http.route.
func Route(path string) string {
	if path == "" || path == "/" || path == "*" {
		return path
	}
	if !strings.HasPrefix(path, "/") {
		return path
	}
	// Most paths have no id: they are returned as they are, unallocated.
	var b strings.Builder
	last := 0 // path[:last] is in b, or needs no change
	for start := 1; start <= len(path); {
		end := strings.IndexByte(path[start:], '/')
		if end < 0 {
			end = len(path)
		} else {
			end += start
		}
		if looksLikeID(path[start:end]) {
			if b.Len() == 0 {
				b.Grow(len(path))
			}
			b.WriteString(path[last:start])
			b.WriteString("{id}")
			last = end
		}
		start = end + 1
	}
	if last == 0 {
		return path
	}
	b.WriteString(path[last:])
	return b.String()
}

func looksLikeID(s string) bool {
	if s == "" {
		return false
	}
	digits, hex, other := 0, 0, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'):
			hex++
		case c == '-' || c == '_':
		default:
			other++
		}
	}
	if digits == len(s) {
		return true // /users/42
	}
	if other == 0 && digits > 0 && len(s) >= 8 {
		return true // hex ids, UUIDs
	}
	// Tokens such as "a1b2c3d4e5" with many digits among letters.
	return len(s) >= 16 && digits*3 >= len(s)
}
