// Package httpparse is an incremental HTTP/1.x parser for payloads captured
// by the kernel side of weft, one segment (send/recv syscall) at a time.
//
// A segment is the first len(captured) bytes of a syscall that transferred
// total bytes; the rest were transferred but not captured. One Parser parses
// one direction of one TCP connection. It never panics, keeps its memory
// bounded (a head buffer of at most MaxHeadBytes plus a small method queue),
// and does not allocate for streams it has decided are not HTTP.
//
// Feed returns events (Message values): PhaseHead when a head was parsed and
// the body is still pending, then exactly one terminal event, PhaseDone or
// PhaseAborted; a message that starts and ends within one Feed yields only
// its PhaseDone event. A response parser learns request methods through
// PushRequestMethod, and Close ends a stream, completing a body delimited by
// the connection closing.
//
// Uncaptured bytes are handled as follows:
//   - inside a body delimited by Content-Length or by the connection closing,
//     or inside chunk data, they are counted as body bytes;
//   - where the framing itself (a chunk-size line, the start of the next
//     message) was not captured, the parser loses sync and resynchronises at
//     the start of a later segment that begins with a valid start line;
//   - when a head is cut, the message is reported with HeadTruncated set and
//     its end is estimated: with Content-Length, at the first segment end
//     where the bytes seen since the cut cover Content-Length (all uncaptured
//     bytes are assumed to be body, except after "Expect: 100-continue" where
//     the head is assumed to end with its segment); a request without
//     framing headers is taken to have no body; a chunked message completes
//     on a fully captured segment ending with the last chunk; otherwise the
//     message completes, with EndTS the ts of the last segment attributed to
//     it, when a later segment starts a new message or on Close. Segments
//     after such a message are skipped until one starts a new message.
package httpparse
