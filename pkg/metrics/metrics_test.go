package metrics

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestServeText(t *testing.T) {
	var r Registry
	r.Add(func() map[string]uint64 { return map[string]uint64{"events_read": 3, "events_lost": 1} })
	srv, addr, err := r.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if got, want := string(b), "weft_events_lost 1\nweft_events_read 3\n"; got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Error("content type", resp.Header.Get("Content-Type"))
	}
}
