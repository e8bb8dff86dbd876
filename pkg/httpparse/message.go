package httpparse

// Mode tells a Parser which direction of a connection it parses.
type Mode uint8

const (
	// ModeDetect decides from the first bytes of the stream whether it
	// carries requests or responses. Use it when the direction is unknown.
	ModeDetect Mode = iota
	// ModeRequest parses requests (what a server receives or a client sends).
	ModeRequest
	// ModeResponse parses responses (what a server sends or a client receives).
	ModeResponse
)

func (m Mode) String() string {
	switch m {
	case ModeRequest:
		return "request"
	case ModeResponse:
		return "response"
	}
	return "detect"
}

// Phase says which event a Message reports.
//
// Every message whose start line was parsed produces exactly one terminal
// event (PhaseDone or PhaseAborted), optionally preceded by one PhaseHead
// event, and events come in stream order. A caller pairing requests with
// responses can therefore count terminal events.
type Phase uint8

const (
	// PhaseHead: the head (start line and headers) was parsed and the body
	// is still pending. A terminal event for the same message follows.
	PhaseHead Phase = iota + 1
	// PhaseDone: the message is complete (Complete is true, EndTS is set).
	// It is the only event of a message that completed within the segment
	// whose head it was parsed in.
	PhaseDone
	// PhaseAborted: the message ended without completing, for the reason
	// in Err. It may be the only event of a message whose head could not be
	// parsed fully (HeadTruncated); head fields are valid when HeadTS != 0.
	PhaseAborted
)

func (p Phase) String() string {
	switch p {
	case PhaseHead:
		return "head"
	case PhaseDone:
		return "done"
	case PhaseAborted:
		return "aborted"
	}
	return "unknown"
}

// Message is one event about an HTTP/1.x message. Each event carries a full
// copy of what is known about the message at that point.
type Message struct {
	Phase Phase

	IsRequest  bool
	Method     string // requests: one of the nine recognised methods
	Target     string // requests: the raw request-target, see SplitTarget
	StatusCode int    // responses
	ProtoMajor int    // 1
	ProtoMinor int    // 0 or 1; 1 when the version was not captured

	Host        string // first Host header
	UserAgent   string // first User-Agent header
	TraceParent string // first traceparent header, raw; see ParseTraceParent

	// ContentLength is the declared Content-Length, -1 when absent.
	ContentLength int64
	// Chunked is true when the final transfer coding is chunked; it then
	// delimits the body even when Content-Length is also present.
	Chunked bool
	// KeepAlive is whether the connection persists after this message:
	// HTTP/1.1 defaults to true and HTTP/1.0 to false, "Connection: close"
	// and "Connection: keep-alive" override, and a response delimited by
	// the connection closing is never keep-alive.
	KeepAlive bool
	// Expect100 is true for a request carrying "Expect: 100-continue".
	Expect100 bool
	// UpgradeH2C: the request asks to switch the connection to HTTP/2
	// (Upgrade: h2c); a 101 answer means the server did.
	UpgradeH2C bool
	// Interim is true for a 1xx response other than 101: it precedes the
	// final response and does not answer the request by itself.
	Interim bool
	// HeadTruncated is true when the head was not captured in full, so
	// fields whose header lines were not captured are missing and the end
	// of the message is estimated (see the Parser documentation).
	HeadTruncated bool

	// BodyBytes is the number of body bytes seen so far, uncaptured bytes
	// included. For chunked bodies it counts chunk data only. When the
	// framing was lost (HeadTruncated, ErrCaptureGap) it is an estimate
	// counting every byte attributed to the message.
	BodyBytes int64

	StartTS uint64 // ts of the segment holding the first byte of the message
	HeadTS  uint64 // ts of the segment where the head completed, 0 if never
	EndTS   uint64 // ts of the segment where the message completed, 0 unless Complete

	Complete bool  // Phase == PhaseDone
	Err      error // why the message was aborted (an Error), nil otherwise
}
