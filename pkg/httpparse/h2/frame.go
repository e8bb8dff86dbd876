// Package h2 follows one direction of an HTTP/2 connection from the
// segments the kernel side captures, and reports what spans need: each
// stream's header blocks (decoded with HPACK), its DATA byte counts, its
// end and its reset.
//
// A segment is the first len(captured) bytes of a call that moved total
// bytes. Uncaptured bytes inside a DATA frame are only counted; uncaptured
// bytes of a header block spoil the HPACK dynamic table for every later
// block, and uncaptured frame headers lose the framing: in both cases the
// parser stops for good (Lost says why), since a wrong header on a later
// stream would be worse than none.
package h2

import "encoding/binary"

// ClientPreface opens every HTTP/2 connection, sent by the client.
const ClientPreface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// FrameType is an HTTP/2 frame type (RFC 9113, section 6).
type FrameType uint8

const (
	FrameData         FrameType = 0x0
	FrameHeaders      FrameType = 0x1
	FramePriority     FrameType = 0x2
	FrameRSTStream    FrameType = 0x3
	FrameSettings     FrameType = 0x4
	FramePushPromise  FrameType = 0x5
	FramePing         FrameType = 0x6
	FrameGoAway       FrameType = 0x7
	FrameWindowUpdate FrameType = 0x8
	FrameContinuation FrameType = 0x9
)

const (
	flagEndStream  = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

const frameHeaderLen = 9

type frameHeader struct {
	length   uint32
	typ      FrameType
	flags    uint8
	streamID uint32
}

func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{
		length:   uint32(b[0])<<16 | uint32(b[1])<<8 | uint32(b[2]),
		typ:      FrameType(b[3]),
		flags:    b[4],
		streamID: binary.BigEndian.Uint32(b[5:9]) & 0x7fffffff,
	}
}

// LooksLikeServerStart reports whether b can be the first bytes a server
// sends on an HTTP/2 connection: a SETTINGS frame on stream 0 (RFC 9113,
// 3.4), without its ACK flag, of a length that is a multiple of 6.
func LooksLikeServerStart(b []byte) bool {
	if len(b) < frameHeaderLen {
		return false
	}
	h := parseFrameHeader(b)
	return h.typ == FrameSettings && h.streamID == 0 && h.flags&0x1 == 0 && h.length%6 == 0
}
