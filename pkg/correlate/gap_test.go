package correlate

import (
	"testing"

	"github.com/weftdev/weft/pkg/event"
)

// A data event that follows events the ring buffer dropped: the request
// seen before it is not paired with the response after it (that answers a
// request whose events were lost); it is counted, and the connection's
// next request is followed as usual.
func TestGapDropsWhatWasInFlight(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Ingress, 1*ms, "GET /one HTTP/1.1\r\nHost: a\r\n\r\n")
	// /one's response and /two's request were lost: /two's response.
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Egress,
		Time: 5 * ms, Bytes: 44, Payload: []byte("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"),
		Local: srvAddr, Remote: cliAddr, Gap: event.GapSocket})
	r.data(1, 10, 11, event.Ingress, 6*ms, "GET /three HTTP/1.1\r\nHost: a\r\n\r\n")
	r.data(1, 10, 11, event.Egress, 7*ms, ok200)
	if len(r.spans) != 1 || r.spans[0].Path != "/three" || r.spans[0].StatusCode != 200 {
		t.Fatalf("spans %+v, want /three's alone", r.spans)
	}
	if n := r.c.Stats().LostInGap.Load(); n != 1 {
		t.Errorf("requests_lost_gap %d, want 1", n)
	}
}

// A close that follows dropped events ends nothing as an error: the
// response may well have been sent, in an event that was lost. The bit of
// the other stream (TLS plaintext) leaves the socket's bytes alone.
func TestGapAtClose(t *testing.T) {
	for _, tc := range []struct {
		gap   event.Gap
		spans int
	}{{event.GapSocket, 0}, {event.GapTLS, 1}} {
		r := newRec(t, Options{})
		r.data(1, 10, 11, event.Ingress, 1*ms, "GET /one HTTP/1.1\r\nHost: a\r\n\r\n")
		r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: 1, Time: 5 * ms, Dir: event.Ingress, Gap: tc.gap})
		if len(r.spans) != tc.spans || r.c.Stats().LostInGap.Load() != uint64(1-tc.spans) {
			t.Errorf("gap %d: spans %+v, %d lost in the gap", tc.gap, r.spans, r.c.Stats().LostInGap.Load())
		}
	}
}
