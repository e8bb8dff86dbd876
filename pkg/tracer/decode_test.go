package tracer

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/weftdev/weft/pkg/event"
)

func record(h tpEventHeader, payload string) []byte {
	b := make([]byte, headerSize+len(payload))
	*(*tpEventHeader)(unsafe.Pointer(&b[0])) = h
	copy(b[headerSize:], payload)
	return b
}

func TestDecodeIPv4AndIPv6(t *testing.T) {
	h := tpEventHeader{TsNs: 7, SockId: 0xffff1234, Pid: 10, Tid: 11, Key: 11, Bytes: 900, Captured: 3,
		Sport: 8080, Dport: 50000, Family: afInet, Kind: uint8(event.KindData), Dir: uint8(event.Ingress)}
	copy(h.Saddr[:], []byte{127, 0, 0, 1})
	copy(h.Daddr[:], []byte{10, 1, 2, 3})
	var ev event.Event
	if err := Decode(record(h, "GET"), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Local != netip.MustParseAddrPort("127.0.0.1:8080") || ev.Remote != netip.MustParseAddrPort("10.1.2.3:50000") {
		t.Errorf("addresses %v %v", ev.Local, ev.Remote)
	}
	if string(ev.Payload) != "GET" || ev.Bytes != 900 || ev.Dir != event.Ingress || ev.ConnID != 0xffff1234 || ev.Time != 7 {
		t.Errorf("event %+v", ev)
	}

	h.Family = afInet6
	h.Saddr = [16]byte{15: 1}
	h.Daddr = netip.MustParseAddr("::ffff:192.0.2.1").As16()
	if err := Decode(record(h, "GET"), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Local != netip.MustParseAddrPort("[::1]:8080") || ev.Remote != netip.MustParseAddrPort("192.0.2.1:50000") {
		t.Errorf("v6 addresses %v %v", ev.Local, ev.Remote)
	}
}

func TestDecodeRejectsShortRecords(t *testing.T) {
	var ev event.Event
	if err := Decode(make([]byte, headerSize-1), &ev); err == nil {
		t.Error("short header accepted")
	}
	h := tpEventHeader{Captured: 100}
	if err := Decode(record(h, "abc"), &ev); err == nil {
		t.Error("payload longer than the record accepted")
	}
}

// The event kinds user space decodes are the kernel side's numbers.
func TestEventKindsMatchTheKernel(t *testing.T) {
	for kernel, kind := range map[tpWeftEventKind]event.Kind{
		tpWeftEventKindWEFT_EV_DATA:      event.KindData,
		tpWeftEventKindWEFT_EV_CLOSE:     event.KindClose,
		tpWeftEventKindWEFT_EV_EXEC:      event.KindExec,
		tpWeftEventKindWEFT_EV_EXIT:      event.KindExit,
		tpWeftEventKindWEFT_EV_FIRST_FIN: event.KindFirstFin,
		tpWeftEventKindWEFT_EV_AGENT:     event.KindAgent,
		tpWeftEventKindWEFT_EV_H2CLAIM:   event.KindH2Claim,
		tpWeftEventKindWEFT_EV_H2SERVE:   event.KindH2Serve,
		tpWeftEventKindWEFT_EV_FORK:      event.KindFork,
		tpWeftEventKindWEFT_EV_CALLS_OUT: event.KindCallsOut,
	} {
		if event.Kind(kernel) != kind {
			t.Errorf("kernel kind %d is event kind %d", kernel, kind)
		}
	}
}

// A Go server's stream report names no socket but the reader's creator;
// nginx's names its socket (the plaintext one over TLS).
func TestDecodeH2Serve(t *testing.T) {
	h := tpEventHeader{SockId: 0x5000, Pid: 10, Goid: 7, H2Stream: 3, Kind: uint8(event.KindH2Serve)}
	var ev event.Event
	if err := Decode(record(h, ""), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ConnID != 0 || ev.Creator != 0x5000 || ev.Goroutine != 7 || ev.H2Stream != 3 {
		t.Errorf("Go report: conn %#x creator %#x goroutine %d stream %d", ev.ConnID, ev.Creator, ev.Goroutine, ev.H2Stream)
	}
	h.Goid, h.Tls = 0, 1
	if err := Decode(record(h, ""), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ConnID != event.TLSConn(0x5000) || ev.Creator != 0 || ev.Goroutine != 0 || ev.H2Stream != 3 {
		t.Errorf("nginx report: conn %#x creator %#x goroutine %d stream %d", ev.ConnID, ev.Creator, ev.Goroutine, ev.H2Stream)
	}
}

// A client stream's kernel-decided span names the TLS plaintext of its
// socket, and the connection's addresses, as the write that opens it will.
func TestDecodeH2Open(t *testing.T) {
	h := tpEventHeader{SockId: 0x5000, Pid: 10, Tid: 11, H2Stream: 5, Kind: uint8(event.KindH2Open), Tls: 1,
		Family: afInet, Sport: 40000, Dport: 443, TraceId: [16]byte{1}, SpanId: [8]byte{2}, TraceFlags: 1}
	copy(h.Saddr[:], []byte{127, 0, 0, 1})
	copy(h.Daddr[:], []byte{127, 0, 0, 2})
	var ev event.Event
	if err := Decode(record(h, ""), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Kind != event.KindH2Open || ev.ConnID != event.TLSConn(0x5000) || ev.H2Stream != 5 ||
		ev.Local.String() != "127.0.0.1:40000" || ev.Remote.String() != "127.0.0.2:443" ||
		ev.TraceID != [16]byte{1} || ev.SpanID != [8]byte{2} || ev.TraceFlags != 1 {
		t.Errorf("decoded %+v", ev)
	}
}
