package tracer

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"unsafe"

	"github.com/weftdev/weft/pkg/event"
)

const headerSize = int(unsafe.Sizeof(tpEventHeader{}))

const (
	afInet  = 2
	afInet6 = 10
)

// Decode turns one ring buffer record into an event. The payload aliases
// raw.
func Decode(raw []byte, ev *event.Event) error {
	if len(raw) < headerSize {
		return fmt.Errorf("record of %d bytes is shorter than the %d-byte header", len(raw), headerSize)
	}
	// The generated struct has the C layout (structs.HostLayout) and the
	// ring buffer keeps records 8-byte aligned.
	h := (*tpEventHeader)(unsafe.Pointer(&raw[0]))
	if int(h.Captured) > len(raw)-headerSize {
		return fmt.Errorf("record claims %d payload bytes, has %d", h.Captured, len(raw)-headerSize)
	}
	*ev = event.Event{
		Kind:    event.Kind(h.Kind),
		Time:    h.TsNs,
		ConnID:  h.SockId,
		PID:     h.Pid,
		TID:     h.Tid,
		Key:     h.Key,
		Dir:     event.Direction(h.Dir),
		Bytes:   h.Bytes,
		Payload: raw[headerSize : headerSize+int(h.Captured)],

		Ctx:        event.CtxKind(h.CtxKind),
		TraceID:    h.TraceId,
		SpanID:     h.SpanId,
		ParentID:   h.ParentId,
		TraceFlags: h.TraceFlags,
		Capture:    event.Capture(h.Capture),
		TLS:        h.Tls != 0,
		H2Stream:   h.H2Stream,
		Goroutine:  h.Goid,
	}
	switch {
	case ev.Kind == event.KindH2Serve && h.Goid != 0: // no socket: the reader's creator
		ev.ConnID, ev.Creator = 0, h.SockId
	case ev.Kind == event.KindData && ev.Dir == event.Ingress && h.Goid != 0 && h.N_more == 0:
		// An HTTP/2 read names its goroutine's creator there.
		ev.Creator = binary.NativeEndian.Uint64(h.MoreSpanIds[0][:])
	}
	ev.Gap = event.Gap(h.Gap)
	if ev.TLS {
		ev.ConnID = event.TLSConn(ev.ConnID)
		if ev.Gap != 0 {
			ev.Gap = event.GapTLS
		}
	}
	if n := int(min(h.N_more, uint8(len(h.MoreSpanIds)))); n > 0 {
		ev.MoreSpanIDs = h.MoreSpanIds[:n]
	}
	switch h.Family {
	case afInet:
		ev.Local = netip.AddrPortFrom(netip.AddrFrom4([4]byte(h.Saddr[:4])), h.Sport)
		ev.Remote = netip.AddrPortFrom(netip.AddrFrom4([4]byte(h.Daddr[:4])), h.Dport)
	case afInet6:
		ev.Local = netip.AddrPortFrom(netip.AddrFrom16(h.Saddr).Unmap(), h.Sport)
		ev.Remote = netip.AddrPortFrom(netip.AddrFrom16(h.Daddr).Unmap(), h.Dport)
	}
	return nil
}
