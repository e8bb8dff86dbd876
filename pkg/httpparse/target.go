package httpparse

import "strings"

// SplitTarget splits a request-target into path and query (without '?'),
// dropping any fragment. It handles the four forms of RFC 9112 section 3.2:
// origin-form "/p?q"; absolute-form "http://host/p?q", whose path defaults
// to "/"; authority-form "host:443" (CONNECT), which has neither; and
// asterisk-form "*" (OPTIONS), returned as path "*". It does not allocate.
func SplitTarget(target string) (path, query string) {
	if target == "" {
		return "", ""
	}
	if target == "*" {
		return "*", ""
	}
	if target[0] != '/' {
		i := strings.Index(target, "://")
		if i > 0 && isScheme(target[:i]) {
			rest := target[i+3:]
			j := strings.IndexAny(rest, "/?#")
			if j < 0 {
				return "/", ""
			}
			if rest[j] != '/' {
				_, q := splitQuery(rest[j:])
				return "/", q
			}
			target = rest[j:]
		} else if !strings.ContainsAny(target, "/?") {
			return "", "" // authority-form
		}
	}
	return splitQuery(target)
}

// splitQuery cuts the fragment, then splits at the first '?'.
func splitQuery(s string) (path, query string) {
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	if i := strings.IndexByte(s, '?'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

// isScheme checks RFC 3986 scheme syntax: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}
