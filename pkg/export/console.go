package export

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/weftdev/weft/pkg/spans"
)

// Console writes one human-readable line per span, for running without a
// backend. Lines are written synchronously with a single Write each, so
// concurrent exports never interleave.
type Console struct {
	resolver Resolver
	log      *slog.Logger
	stats    counters

	mu     sync.Mutex
	w      io.Writer
	closed bool
}

var _ Exporter = (*Console)(nil)

// NewConsole returns a Console writing to w. resolver may be nil, in which
// case spans are labelled by pid only.
func NewConsole(w io.Writer, resolver Resolver) *Console {
	return &Console{w: w, resolver: resolver, log: slog.With("component", "export")}
}

// Export writes s as one line.
func (c *Console) Export(s *spans.Span) {
	c.stats.received.Add(1)
	service := ""
	if c.resolver != nil {
		_, service = c.resolver.Resolve(s.PID)
	}
	line := formatLine(s, service)

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		c.stats.dropped.Add(1)
		return
	}
	if _, err := io.WriteString(c.w, line); err != nil {
		if c.stats.failed.Add(1) == 1 {
			c.log.Warn("writing span failed", "error", err)
		}
		return
	}
	c.stats.exported.Add(1)
}

// Shutdown stops accepting spans; there is nothing buffered to flush.
func (c *Console) Shutdown(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

// Stats returns the current counters.
func (c *Console) Stats() Stats { return c.stats.snapshot() }

// formatLine renders, for example:
//
//	12:03:04.567 frontend[1234]       SERVER GET     /api/users                200  12.3ms trace=4bf9… span=00f0… parent=-
//
// with " error=<type>" appended for failed exchanges and " profiled" for
// spans that have CPU samples.
func formatLine(s *spans.Span, service string) string {
	proc := strconv.FormatUint(uint64(s.PID), 10)
	if service != "" {
		proc = service + "[" + proc + "]"
	}
	method := s.Method
	if method == "" {
		method = "-"
	}
	target := s.Path
	if s.Kind == spans.KindClient {
		host := s.Host
		if host == "" && s.Remote.IsValid() {
			host = s.Remote.String()
		}
		target = host + target
	}
	if s.Query != "" {
		target += "?" + s.Query
	}
	status := "---"
	if s.StatusCode > 0 {
		status = strconv.Itoa(s.StatusCode)
	}
	parent := "-"
	if s.ParentID.IsValid() {
		parent = s.ParentID.String()
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%s %-20s %-6s %-7s %-25s %s %7s trace=%s span=%s parent=%s",
		s.Start.Format("15:04:05.000"), printable(proc), s.Kind, printable(method), printable(target), status,
		formatDuration(s.Duration()), s.TraceID, s.SpanID, parent)
	if et := s.ErrorTypeAttr(); et != "" {
		b.WriteString(" error=" + printable(et))
	}
	if s.Profiled {
		b.WriteString(" profiled")
	}
	b.WriteByte('\n')
	return b.String()
}

func formatDuration(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return strconv.FormatInt(d.Microseconds(), 10) + "µs"
	case d < time.Second:
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
	}
	return strconv.FormatFloat(d.Seconds(), 'f', 2, 64) + "s"
}

// printable keeps captured bytes from injecting newlines or terminal escape
// sequences into the output.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '?'
		}
		return r
	}, s)
}
