package export

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestConsoleLines(t *testing.T) {
	var buf bytes.Buffer
	c := NewConsole(&buf, fakeResolver{1234: "frontend", 77: "billing"})

	ok := serverSpan()
	ok.StatusCode = 200
	c.Export(ok)
	c.Export(serverSpan())
	c.Export(clientSpan())
	slow := clientSpan()
	slow.Host, slow.Query = "api.internal:8080", "id=7"
	slow.End = slow.Start.Add(1500 * time.Millisecond)
	slow.StatusCode, slow.ErrorType = 0, "timeout"
	c.Export(slow)

	want := strings.Join([]string{
		"12:03:04.567 frontend[1234]       SERVER GET     /api/users/42?verbose=1   200  12.3ms trace=4bf92f3577b34da6a3ce929d0e0e4736 span=00f067aa0ba902b7 parent=53995c3f42cd8ad8",
		"12:03:04.567 frontend[1234]       SERVER GET     /api/users/42?verbose=1   503  12.3ms trace=4bf92f3577b34da6a3ce929d0e0e4736 span=00f067aa0ba902b7 parent=53995c3f42cd8ad8 error=503",
		"12:03:04.567 billing[77]          CLIENT POST    10.0.0.9:9000/v1/charge   201   850µs trace=0102030405060708090a0b0c0d0e0f10 span=1112131415161718 parent=-",
		"12:03:04.567 billing[77]          CLIENT POST    api.internal:8080/v1/charge?id=7 ---   1.50s trace=0102030405060708090a0b0c0d0e0f10 span=1112131415161718 parent=- error=timeout",
		"",
	}, "\n")
	if got := buf.String(); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
	if s := c.Stats(); s.Received != 4 || s.Exported != 4 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConsoleSanitizesAndCounts(t *testing.T) {
	var buf bytes.Buffer
	c := NewConsole(&buf, nil)
	s := serverSpan()
	s.Path = "/a\nb\x1b[31m"
	c.Export(s)
	line := buf.String()
	if strings.Count(line, "\n") != 1 || strings.Contains(line, "\x1b") {
		t.Fatalf("control characters leaked: %q", line)
	}
	if !strings.Contains(line, " 1234 ") {
		t.Fatalf("pid missing without resolver: %q", line)
	}

	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	c.Export(s)
	if st := c.Stats(); st.Received != 2 || st.Exported != 1 || st.Dropped != 1 {
		t.Fatalf("stats after shutdown %+v", st)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestConsoleWriteErrors(t *testing.T) {
	c := NewConsole(failingWriter{}, nil)
	c.Export(serverSpan())
	if st := c.Stats(); st.Failed != 1 || st.Exported != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestConsoleConcurrentLinesDoNotInterleave(t *testing.T) {
	var buf bytes.Buffer
	c := NewConsole(&buf, fakeResolver{1234: "frontend"})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				c.Export(serverSpan())
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "12:03:04.567 frontend[1234]") || !strings.HasSuffix(l, "error=503") {
			t.Fatalf("garbled line %q", l)
		}
	}
}
