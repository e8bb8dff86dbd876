package correlate

import (
	"net/netip"
	"testing"
	"time"

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

// A socket at the address of one whose close was dropped (other ports):
// the old one's request is not answered by the new one's response.
func TestSocketReusedAfterDroppedClose(t *testing.T) {
	r := newRec(t, Options{})
	r.data(1, 10, 11, event.Ingress, 1*ms, "GET /one HTTP/1.1\r\nHost: a\r\n\r\n")
	other := netip.MustParseAddrPort("127.0.0.1:50001")
	for i, m := range []struct {
		dir     event.Direction
		payload string
	}{{event.Ingress, "GET /two HTTP/1.1\r\nHost: a\r\n\r\n"}, {event.Egress, ok200}} {
		r.c.Handle(&event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: m.dir,
			Time: uint64(5+i) * ms, Bytes: uint32(len(m.payload)), Payload: []byte(m.payload), Local: srvAddr, Remote: other})
	}
	if len(r.spans) != 1 || r.spans[0].Path != "/two" || r.c.Stats().LostInGap.Load() != 1 {
		t.Fatalf("spans %+v, %d lost in the gap; want /two's alone, 1", r.spans, r.c.Stats().LostInGap.Load())
	}
}

// A request without an answer when its process exits, or past the
// request timeout, ends as an error, unless the kernel dropped events
// after it began: then its answer may be among them, and it is counted.
func TestUnansweredAfterLoss(t *testing.T) {
	for _, lost := range []uint64{0, 7} {
		for _, end := range []string{"exit", "timeout"} {
			r := newRec(t, Options{RequestTimeout: time.Second})
			r.c.DroppedAt(ms / 2) // before the request: not its loss
			r.data(1, 10, 11, event.Ingress, 1*ms, "GET /one HTTP/1.1\r\nHost: a\r\n\r\n")
			if lost > 0 {
				r.c.DroppedAt(lost * ms)
			}
			if end == "exit" {
				r.c.Handle(&event.Event{Kind: event.KindExit, PID: 10, Time: 5 * ms})
			} else {
				r.c.Expire(2 * uint64(time.Second))
			}
			want := 1
			if lost > 0 {
				want = 0
			}
			if len(r.spans) != want || r.c.Stats().LostInGap.Load() != uint64(1-want) {
				t.Errorf("%s, %d lost: spans %+v, %d lost in a gap", end, lost, r.spans, r.c.Stats().LostInGap.Load())
			}
		}
	}
}
