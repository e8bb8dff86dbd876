package httpparse

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// seg is one captured segment: data is what was captured and total the
// syscall's byte count (0 means len(data)).
type seg struct {
	data  string
	total int
}

// s is a fully captured segment.
func s(data string) seg { return seg{data: data} }

// cut is data captured only up to its first n bytes.
func cut(data string, n int) seg { return seg{data: data[:n], total: len(data)} }

// gap is a segment with n uncaptured bytes after the captured data.
func gap(data string, n int) seg { return seg{data: data, total: len(data) + n} }

// parserCase is one table entry shared by the table-driven tests.
type parserCase struct {
	name    string
	mode    Mode
	push    []string // methods pushed before feeding
	mid     bool     // StartMidStream
	segs    []seg    // fed with ts 1, 2, ...
	close   bool     // Close with ts len(segs)+1
	want    []string // summaries of all events, in order
	errs    map[Error]uint64
	notHTTP bool
}

func runCase(t *testing.T, c parserCase) {
	t.Helper()
	p := NewParser(c.mode)
	if c.mid {
		p.StartMidStream()
	}
	for _, m := range c.push {
		p.PushRequestMethod(m)
	}
	var got []string
	for i, sg := range c.segs {
		total := max(sg.total, len(sg.data))
		for _, m := range p.Feed([]byte(sg.data), total, uint64(i+1)) {
			got = append(got, summary(m))
		}
	}
	if p.NotHTTP() != c.notHTTP {
		t.Errorf("NotHTTP = %v, want %v", p.NotHTTP(), c.notHTTP)
	}
	if c.close {
		for _, m := range p.Close(uint64(len(c.segs) + 1)) {
			got = append(got, summary(m))
		}
	}
	if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
		t.Errorf("events:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(c.want, "\n      "))
	}
	errs := p.Errors()
	for e := Error(1); e < numErrorKinds; e++ {
		if errs[e] != c.errs[e] {
			t.Errorf("error count %v = %d, want %d", e, errs[e], c.errs[e])
		}
	}
}

// summary renders the fields the table tests check, e.g.
// "done GET /x 1.1 cl=-1 body=0 ts=1/1/1 ka".
func summary(m Message) string {
	var b strings.Builder
	b.WriteString(m.Phase.String())
	if m.IsRequest {
		fmt.Fprintf(&b, " %s %s", m.Method, m.Target)
	} else {
		fmt.Fprintf(&b, " %d", m.StatusCode)
	}
	fmt.Fprintf(&b, " %d.%d cl=%d body=%d ts=%d/%d/%d", m.ProtoMajor, m.ProtoMinor, m.ContentLength, m.BodyBytes, m.StartTS, m.HeadTS, m.EndTS)
	for _, f := range []struct {
		on   bool
		name string
	}{
		{m.KeepAlive, "ka"}, {m.Chunked, "chunked"}, {m.Expect100, "expect"},
		{m.Interim, "interim"}, {m.HeadTruncated, "trunc"},
	} {
		if f.on {
			b.WriteString(" " + f.name)
		}
	}
	var e Error
	if errors.As(m.Err, &e) {
		b.WriteString(" err=" + e.String())
	}
	return b.String()
}
