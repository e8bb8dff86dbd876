package correlate

import (
	"testing"

	"github.com/weftdev/weft/pkg/event"
	"github.com/weftdev/weft/pkg/sampling"
)

// The kernel decided the trace is not sampled: the exchange is parsed and
// counted, and no span leaves the correlator.
func TestUnsampledKernelCtxIsCountedNotEmitted(t *testing.T) {
	r := newRec(t, Options{})
	for i, flags := range []byte{0x00, 0x01, 0x02} {
		in := &event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress,
			Time: uint64(2*i+1) * ms, Payload: []byte(getHello), Local: srvAddr, Remote: cliAddr,
			Ctx: event.CtxServer, TraceID: [16]byte{byte(i + 1)}, SpanID: [8]byte{9}, TraceFlags: flags}
		in.Bytes = uint32(len(in.Payload))
		r.c.Handle(in)
		r.data(1, 10, 11, event.Egress, uint64(2*i+2)*ms, ok200)
	}
	if len(r.spans) != 1 || r.spans[0].TraceID != [16]byte{2} {
		t.Fatalf("want only the sampled span, got %+v", r.spans)
	}
	st := r.c.Stats()
	if st.ServerSpans.Load() != 3 || st.Unsampled.Load() != 2 {
		t.Errorf("server spans %d, unsampled %d; want 3 and 2", st.ServerSpans.Load(), st.Unsampled.Load())
	}
}

// A span the kernel gave no ids starts a trace here, and the sampler
// decides it as the kernel would have.
func TestNoKernelCtxFollowsSampler(t *testing.T) {
	for _, tc := range []struct {
		name string
		want int
	}{{"always_on", 1}, {"always_off", 0}, {"parentbased_always_off", 0}} {
		s, err := sampling.Parse(tc.name, "")
		if err != nil {
			t.Fatal(err)
		}
		r := newRec(t, Options{Sampler: &s})
		r.data(1, 10, 11, event.Ingress, 1*ms, getHello)
		r.data(1, 10, 11, event.Egress, 2*ms, ok200)
		if len(r.spans) != tc.want || r.c.Stats().Unsampled.Load() != uint64(1-tc.want) {
			t.Errorf("%s: %d spans, %d unsampled; want %d span(s)", tc.name, len(r.spans), r.c.Stats().Unsampled.Load(), tc.want)
		}
	}
}

// The kernel decided "not sampled" at the head's first segment, then found
// a sampled traceparent in the next: the span is exported, fully named.
func TestUnsampledSpanJoiningSampledTrace(t *testing.T) {
	r := newRec(t, Options{})
	first := &event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress, Time: 1 * ms,
		Payload: []byte("GET /hello?x=1 HTTP/1.1\r\n"), Local: srvAddr, Remote: cliAddr,
		Ctx: event.CtxServer, TraceID: [16]byte{1}, SpanID: [8]byte{9}, TraceFlags: 0}
	first.Bytes = uint32(len(first.Payload))
	r.c.Handle(first)
	more := &event.Event{Kind: event.KindData, ConnID: 1, PID: 10, TID: 11, Key: 11, Dir: event.Ingress, Time: 1 * ms,
		Payload: []byte("traceparent: 00-04040000000000000000000000000000-0500000000000000-01\r\nHost: x\r\n\r\n"),
		Local:   srvAddr, Remote: cliAddr,
		Ctx: event.CtxServerCont, TraceID: [16]byte{4, 4}, SpanID: [8]byte{9}, ParentID: [8]byte{5}, TraceFlags: 1}
	more.Bytes = uint32(len(more.Payload))
	r.c.Handle(more)
	r.data(1, 10, 11, event.Egress, 4*ms, ok200)
	if len(r.spans) != 1 {
		t.Fatalf("got %d spans", len(r.spans))
	}
	if s := r.spans[0]; s.TraceID != ([16]byte{4, 4}) || s.Name != "GET /hello" || s.Path != "/hello" || s.Host != "x" {
		t.Errorf("span %+v: want it in the incoming trace, named GET /hello", s)
	}
}
