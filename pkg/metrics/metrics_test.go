package metrics

import (
	"net/http"
	"strings"
	"testing"
)

func TestServeText(t *testing.T) {
	var r Registry
	r.Add(func() map[string]uint64 {
		return map[string]uint64{"events_read": 3, "events_lost": 1, "bytes": 12345678901}
	})
	srv, addr, err := r.Serve("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := http.Get("http://" + addr.String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Error("content type", resp.Header.Get("Content-Type"))
	}
	mfs, err := ParseText(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := SelfMetrics(mfs)
	want := map[string]uint64{"events_read": 3, "events_lost": 1, "bytes": 12345678901}
	if len(got) != len(want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
}
