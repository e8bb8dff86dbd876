// Package event is the kernel-independent form of what the BPF programs
// report. The correlator consumes it, so it can be tested on recorded
// sequences without loading anything into the kernel.
package event

import "net/netip"

// Kind says what happened.
type Kind uint8

const (
	KindData Kind = 1 // bytes sent or received on a TCP socket
	// KindClose: a socket weft reported data for was closed; Dir says who
	// ended it: Ingress the peer (its FIN came first, or its reset),
	// Egress this process; Bytes, how many bytes the peer sent that the
	// process never read.
	KindClose Kind = 2
	KindExec  Kind = 3 // a process called execve
	KindExit  Kind = 4 // a traced process exited
	// KindFirstFin: one side closed a connection weft reported data for
	// while it was established, Dir says which: Ingress the peer (its
	// FIN), Egress this process. The KindClose follows later.
	KindFirstFin Kind = 5
	// KindAgent: a traced process began to speak the mount protocol: its
	// Java agent loaded the library whose TLS hooks weft attaches.
	KindAgent Kind = 6
	// KindH2Claim: goroutine Goroutine of process PID will write the
	// HEADERS of HTTP/2 stream H2Stream for the request ParentID of
	// TraceID (grpc-go's loopy writer, which writes every stream's).
	KindH2Claim Kind = 7
	// KindH2Serve: the HTTP/2 server stream H2Stream of the connection
	// that goroutine Goroutine of process PID reads (or a goroutine it
	// created reads, or its creator, Creator, read first) is span SpanID
	// of TraceID under ParentID, which the kernel decided from the
	// stream's traceparent for the stream's handler (grpc-go's and
	// net/http's servers). With Goroutine 0 it names the stream's
	// connection, ConnID, instead (nginx's upstream calls).
	KindH2Serve Kind = 8
	// KindFork: traced process TID forked process PID, which runs its
	// parent's program but none of its per-process uprobes.
	KindFork Kind = 9
	// KindCallsOut: process PID, a Go program followed by goroutine,
	// connected out for the first time: from now on its goroutines'
	// creation is followed (their calls may need their creator's parent).
	KindCallsOut Kind = 10
	// KindH2Open: the HTTP/2 client stream H2Stream that thread TID of
	// process PID is about to open on connection ConnID (between Local
	// and Remote) is span SpanID of TraceID under ParentID (zero: a root),
	// decided in the kernel for the stream's server end on this host
	// (bpf/include/h2seed.h).
	KindH2Open Kind = 11
)

// Direction is the flow of bytes relative to the traced process.
type Direction uint8

const (
	Egress  Direction = 0 // the process sent the bytes
	Ingress Direction = 1 // the process received the bytes
)

func (d Direction) String() string {
	if d == Ingress {
		return "ingress"
	}
	return "egress"
}

// CtxKind says whether the kernel assigned a span to the request that a
// data event starts.
type CtxKind uint8

const (
	CtxNone   CtxKind = 0
	CtxServer CtxKind = 1 // a received request start: its server span
	CtxClient CtxKind = 2 // a sent request start: its client span
	// CtxServerCont: a received segment continuing a request head carried
	// the traceparent the start lacked: server span SpanID joins TraceID
	// under ParentID.
	CtxServerCont CtxKind = 3
	// CtxH2Stream: a sent HTTP/2 segment written by the goroutine that
	// began stream H2Stream's HEADERS for a request, span ParentID of
	// TraceID; SpanID is not set (the stream's span is decided in user
	// space).
	CtxH2Stream CtxKind = 4
)

// Event is one report from the kernel.
type Event struct {
	Kind Kind
	// Time is CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns).
	Time uint64
	// ConnID identifies a socket while it lives (the kernel's struct sock
	// address); a close event carries only this and Dir. The plaintext of
	// a TLS socket is another stream, TLSConn(ConnID).
	ConnID uint64
	PID    uint32
	TID    uint32
	// Key is the correlation key: which request the thread works for.
	Key uint32
	Dir Direction
	// Bytes is how many bytes the call moved; Payload holds only the
	// first of them (the capture limit).
	Bytes   uint32
	Payload []byte
	Local   netip.AddrPort
	Remote  netip.AddrPort

	// The span the kernel assigned to the request this segment starts,
	// when Ctx is not CtxNone: the ids that went on the wire.
	Ctx        CtxKind
	TraceID    [16]byte
	SpanID     [8]byte
	ParentID   [8]byte // zero for a root span
	TraceFlags byte
	// MoreSpanIDs are the client spans of requests pipelined after the
	// first in the same send (same trace and parent), in order.
	MoreSpanIDs [][8]byte
	// H2Stream is the stream of a CtxH2Stream event, a KindH2Claim or a
	// KindH2Serve.
	H2Stream uint32
	// Goroutine is the goroutine that wrote or read an HTTP/2 segment of
	// a Go process (its thread elsewhere), or that a KindH2Claim or
	// KindH2Serve names; 0 otherwise.
	Goroutine uint64
	// Creator is the goroutine that created Goroutine (a KindH2Serve, or
	// an HTTP/2 read of a Go process); 0 when unknown.
	Creator uint64
	// Capture says what Payload is.
	Capture Capture
	// TLS: Payload is the plaintext a TLS library read or wrote on the
	// socket, not its bytes on the wire.
	TLS bool
	// Gap says that the full ring buffer dropped data events before this
	// one: of its stream (a data event), of the socket's bytes or TLS
	// plaintext (a close).
	Gap Gap
}

// Gap names the streams of a socket that lost data events.
type Gap uint8

const (
	GapSocket Gap = 1 // the socket's bytes
	GapTLS    Gap = 2 // its TLS plaintext
)

// TLSConn is the ConnID of the plaintext of socket id's TLS connection:
// socket addresses are aligned, so the low bit is free (the kernel's
// skip table uses the same key).
func TLSConn(id uint64) uint64 { return id | 1 }

// Capture is what the kernel copied of a call.
type Capture uint8

const (
	// CapturePrefix: the call's first bytes.
	CapturePrefix Capture = 0
	// CaptureH2: an HTTP/2 connection's frames in the call, with the
	// payloads of frames other than HEADERS, CONTINUATION, PUSH_PROMISE,
	// RST_STREAM and GOAWAY left out (their headers stay).
	CaptureH2 Capture = 1
	// CaptureH2Cut: an HTTP/2 connection whose copy lost the framing;
	// no payload.
	CaptureH2Cut Capture = 2
)
