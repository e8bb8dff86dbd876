package correlate

import (
	"time"

	"testing"

	"github.com/weftdev/weft/pkg/event"
)

// A client that reads a response's head and closes without reading the
// body (Python's urlopen when only the status is used) ended the exchange
// itself: the span is the head's status, not an error, and no parse error
// is counted. The same cut made by the peer (its FIN or reset before the
// declared body) is a failed response.
func TestResponseCutByClose(t *testing.T) {
	const head = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
	for _, tc := range []struct {
		name      string
		by        event.Direction // the side that ended the connection
		errorType string
		bodySize  int64
		parseErrs uint64
	}{
		{"local close", event.Egress, "", 5, 0},
		{"peer close", event.Ingress, "response_incomplete", 0, 1},
	} {
		r := newRec(t, Options{})
		r.data(100, 10, 11, event.Egress, 1*ms, "GET /work HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n")
		r.data(100, 10, 11, event.Ingress, 3*ms, head)
		r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: 100, Time: 9 * ms, Dir: tc.by})
		if len(r.spans) != 1 {
			t.Fatalf("%s: got %d spans", tc.name, len(r.spans))
		}
		s := r.spans[0]
		if s.StatusCode != 200 || s.ErrorType != tc.errorType || s.ResponseBodySize != tc.bodySize {
			t.Errorf("%s: span status %d, error %q, body %d; want 200, %q, %d", tc.name, s.StatusCode, s.ErrorType, s.ResponseBodySize, tc.errorType, tc.bodySize)
		}
		if tc.errorType == "" && s.Duration() != 2*time.Millisecond {
			t.Errorf("%s: duration %v, want until the head arrived (2ms)", tc.name, s.Duration())
		}
		if n := r.c.Stats().ParseErrors.Load(); n != tc.parseErrs {
			t.Errorf("%s: %d parse errors, want %d", tc.name, n, tc.parseErrs)
		}
	}
}

// A client that closed first may exit before its connection reaches
// TCP_CLOSE (the peer's body arrives later, or never): the first FIN says
// it ended the exchange. A peer that closed first keeps the cut an error.
func TestFirstFinDecidesAtExit(t *testing.T) {
	for _, tc := range []struct {
		by        event.Direction
		errorType string
	}{{event.Egress, ""}, {event.Ingress, "response_incomplete"}} {
		r := newRec(t, Options{})
		r.data(100, 10, 11, event.Egress, 1*ms, "GET /work HTTP/1.1\r\nHost: up\r\n\r\n")
		r.data(100, 10, 11, event.Ingress, 3*ms, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
		r.c.Handle(&event.Event{Kind: event.KindFirstFin, ConnID: 100, Time: 4 * ms, Dir: tc.by})
		r.c.Handle(&event.Event{Kind: event.KindExit, PID: 10, Time: 5 * ms})
		if len(r.spans) != 1 || r.spans[0].ErrorType != tc.errorType {
			t.Errorf("first FIN %v: spans %+v, want one with error type %q", tc.by, r.spans, tc.errorType)
		}
	}
}

// A response this process sent and could not finish is an error whoever
// ended the connection: its writes failed (an in-process instrumentation
// records the exception), be it its own close, the client's reset or its
// exit.
func TestServerResponseCutIsAnError(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  event.Event
	}{
		{"own close", event.Event{Kind: event.KindClose, ConnID: 1, Time: 3 * ms, Dir: event.Egress}},
		{"client reset", event.Event{Kind: event.KindClose, ConnID: 1, Time: 3 * ms, Dir: event.Ingress}},
		{"exit", event.Event{Kind: event.KindExit, PID: 10, Time: 3 * ms}},
	} {
		r := newRec(t, Options{})
		r.data(1, 10, 11, event.Ingress, 1*ms, getHello)
		r.data(1, 10, 11, event.Egress, 2*ms, "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nabc")
		r.c.Handle(&tc.end)
		if len(r.spans) != 1 || r.spans[0].ErrorType != "response_incomplete" || r.spans[0].StatusCode != 200 {
			t.Errorf("%s: spans %+v, want one 200 ended by response_incomplete", tc.name, r.spans)
		}
	}
}

// The server sent its whole response and closed (Connection: close); the
// client closed without reading the body: the bytes it left unread say it
// stopped reading, although the server's FIN came first.
func TestUnreadBytesMakeItTheClientsChoice(t *testing.T) {
	r := newRec(t, Options{})
	r.data(100, 10, 11, event.Egress, 1*ms, "GET /work HTTP/1.1\r\nHost: up\r\nConnection: close\r\n\r\n")
	r.data(100, 10, 11, event.Ingress, 3*ms, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
	r.c.Handle(&event.Event{Kind: event.KindFirstFin, ConnID: 100, Time: 4 * ms, Dir: event.Ingress})
	r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: 100, Time: 5 * ms, Dir: event.Ingress, Bytes: 5})
	if len(r.spans) != 1 || r.spans[0].ErrorType != "" || r.spans[0].ResponseBodySize != 5 {
		t.Errorf("spans %+v: want one without error, body 5", r.spans)
	}
}

// A TLS socket is two streams: its bytes on the wire (the handshake, not
// HTTP) and the plaintext its TLS library reported (event.TLSConn of the
// socket). The socket's close ends both; the plaintext's spans are https.
func TestTLSPlaintextClosedWithItsSocket(t *testing.T) {
	r := newRec(t, Options{})
	const sock = 200
	plain := event.TLSConn(sock)
	r.data(sock, 10, 11, event.Egress, 1*ms, "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03") // ClientHello
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: plain, TLS: true, PID: 10, TID: 11, Key: 11, Dir: event.Egress,
		Time: 2 * ms, Bytes: uint32(len(getHello)), Payload: []byte(getHello), Local: cliAddr, Remote: upAddr})
	r.c.Handle(&event.Event{Kind: event.KindData, ConnID: plain, TLS: true, PID: 10, TID: 11, Key: 11, Dir: event.Ingress,
		Time: 3 * ms, Bytes: uint32(len(ok200) - 2), Payload: []byte(ok200[:len(ok200)-2]), Local: cliAddr, Remote: upAddr})
	if len(r.spans) != 0 {
		t.Fatalf("span before its body: %+v", r.spans)
	}
	r.c.Handle(&event.Event{Kind: event.KindClose, ConnID: sock, Time: 4 * ms, Dir: event.Ingress})
	if len(r.spans) != 1 {
		t.Fatalf("the socket's close ended %d spans of its plaintext, want 1", len(r.spans))
	}
	if s := r.spans[0]; !s.TLS || s.Scheme() != "https" || s.Path != "/hello" || s.ErrorType != "response_incomplete" {
		t.Errorf("span %+v", s)
	}
	if r.c.Pending() != 0 {
		t.Errorf("%d requests pending after the close", r.c.Pending())
	}
}
