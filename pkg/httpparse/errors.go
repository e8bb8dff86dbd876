package httpparse

// Error is a reason the parser could not parse part of a stream. The values
// are comparable constants; converting one to error does not allocate.
type Error uint8

const (
	ErrBadRequestLine      Error = iota + 1 // malformed request line
	ErrBadStatusLine                        // malformed status line
	ErrBadHeader                            // header line without a valid name (skipped)
	ErrHeaderTooLarge                       // head longer than MaxHeadBytes
	ErrBadContentLength                     // invalid or conflicting Content-Length
	ErrBadTransferEncoding                  // request whose final coding is not chunked
	ErrBadChunk                             // malformed chunked framing
	ErrHeadTruncated                        // head cut by the capture limit
	ErrCaptureGap                           // framing lost in uncaptured bytes
	ErrIncomplete                           // stream closed in the middle of a message
	ErrMethodQueueFull                      // PushRequestMethod dropped the oldest method

	numErrorKinds // array size for ErrorCounts; index 0 is unused
)

var errorText = [numErrorKinds]struct{ key, msg string }{
	ErrBadRequestLine:      {"bad_request_line", "malformed request line"},
	ErrBadStatusLine:       {"bad_status_line", "malformed status line"},
	ErrBadHeader:           {"bad_header", "malformed header line"},
	ErrHeaderTooLarge:      {"header_too_large", "header block too large"},
	ErrBadContentLength:    {"bad_content_length", "invalid Content-Length"},
	ErrBadTransferEncoding: {"bad_transfer_encoding", "unsupported Transfer-Encoding"},
	ErrBadChunk:            {"bad_chunk", "malformed chunked body"},
	ErrHeadTruncated:       {"head_truncated", "header block cut by capture limit"},
	ErrCaptureGap:          {"capture_gap", "message framing lost in uncaptured bytes"},
	ErrIncomplete:          {"incomplete", "stream closed mid-message"},
	ErrMethodQueueFull:     {"method_queue_full", "request method queue full"},
}

// Error returns a human readable message, e.g. "httpparse: header block too large".
func (e Error) Error() string {
	if e == 0 || e >= numErrorKinds {
		return "httpparse: unknown error"
	}
	return "httpparse: " + errorText[e].msg
}

// String returns a short snake_case key suitable as a metric label.
func (e Error) String() string {
	if e == 0 || e >= numErrorKinds {
		return "unknown"
	}
	return errorText[e].key
}

// ErrorCounts holds one counter per Error, indexed by the Error value:
// c[ErrBadChunk] is the number of malformed chunked bodies. Index 0 is unused.
type ErrorCounts [numErrorKinds]uint64

// Add adds o to c, for aggregating the counters of many parsers.
func (c *ErrorCounts) Add(o *ErrorCounts) {
	for i := range c {
		c[i] += o[i]
	}
}

// Total is the sum of all counters.
func (c ErrorCounts) Total() uint64 {
	var n uint64
	for _, v := range c {
		n += v
	}
	return n
}

// Map returns the non-zero counters keyed by Error.String.
func (c ErrorCounts) Map() map[string]uint64 {
	m := make(map[string]uint64)
	for i, v := range c {
		if v != 0 {
			m[Error(i).String()] = v
		}
	}
	return m
}

// count records e as the latest error.
func (p *Parser) count(e Error) {
	p.errs[e]++
	p.lastErr = e
}

// Errors returns a copy of the per-reason error counters.
func (p *Parser) Errors() ErrorCounts { return p.errs }

// LastError returns the most recent error the parser recorded, nil if none.
func (p *Parser) LastError() error {
	if p.lastErr == 0 {
		return nil
	}
	return p.lastErr
}
