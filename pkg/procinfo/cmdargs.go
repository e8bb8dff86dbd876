package procinfo

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Bounds on process.command_args: JVM class paths alone can be hundreds of
// KiB, which would be repeated in every export request.
const (
	maxCommandArgs   = 64
	maxCommandArgLen = 512
)

const redacted = "REDACTED"

// secretName matches option and property names whose values are likely
// credentials. The semantic conventions ask for command_args only with
// sanitization, since passwords passed as flags are common.
var secretName = regexp.MustCompile(`(?i)(passw|pwd|secret|token|api[-_.]?key|credential|private[-_.]?key|auth)`)

// commandArgs returns a bounded, sanitized copy of argv.
func commandArgs(args []string) []string {
	n := min(len(args), maxCommandArgs)
	out := make([]string, 0, n)
	redactNext := false
	for _, a := range args[:n] {
		switch {
		case redactNext:
			a = redacted
			redactNext = false
		case strings.HasPrefix(a, "-") || strings.Contains(a, "="):
			if k, _, ok := strings.Cut(a, "="); ok {
				if secretName.MatchString(k) {
					a = k + "=" + redacted
				}
			} else if secretName.MatchString(a) {
				// "--password hunter2": the value is the next argument.
				redactNext = true
			}
		}
		out = append(out, truncate(a, maxCommandArgLen))
	}
	return out
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// validUTF8 makes s safe for OTLP: protobuf refuses to marshal strings that
// are not UTF-8, which would fail the whole export request.
func validUTF8(s string) string {
	return strings.ToValidUTF8(s, "\uFFFD")
}
