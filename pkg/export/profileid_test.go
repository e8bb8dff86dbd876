package export

import (
	"strings"
	"testing"
)

// A span with CPU samples links to them by its own id; one without has no
// link, since Grafana would show an empty profile.
func TestProfileIDAttribute(t *testing.T) {
	s := serverSpan()
	if _, ok := attrsOf(s)[ProfileIDKey]; ok {
		t.Errorf("%s on a span without samples", ProfileIDKey)
	}
	if strings.Contains(formatLine(s, "svc"), "profiled") {
		t.Errorf("console marks a span without samples: %s", formatLine(s, "svc"))
	}
	s.Profiled = true
	if got := attrsOf(s)[ProfileIDKey]; got != s.SpanID.String() {
		t.Errorf("%s = %v, want the span id %s", ProfileIDKey, got, s.SpanID)
	}
	if line := formatLine(s, "svc"); !strings.HasSuffix(line, " profiled\n") {
		t.Errorf("console line %q does not say profiled", line)
	}
}
