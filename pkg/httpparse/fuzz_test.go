package httpparse

import (
	"strings"
	"testing"
)

// FuzzParser feeds arbitrary bytes split into segments at arbitrary points,
// with arbitrary parts of each segment left uncaptured, and checks that the
// parser neither panics nor breaks its invariants.
//
// plan drives the split, two bytes per segment: a picks the segment length
// (0xff: the rest of the stream), b the captured fraction (high bit clear:
// all captured) and, in its low bits, an optional PushRequestMethod. mode
// selects the Mode (low bits), StartMidStream (0x80) and a small head limit
// (0x40).
func FuzzParser(f *testing.F) {
	seeds := []struct {
		data string
		plan []byte
		mode uint8
	}{
		{getReq + postReq, nil, uint8(ModeRequest)},
		{getReq + postReq, []byte{10, 0, 3, 0, 40, 0, 200, 0}, uint8(ModeDetect)},
		{postHd + "hello world" + getReq, []byte{60, 0x80 | 20, 0xff, 0}, uint8(ModeRequest)},
		{"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", []byte{20, 0x01, 30, 0x02}, uint8(ModeResponse)},
		{chunkedResp + "5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nT: 1\r\n\r\n", []byte{50, 0, 2, 0, 7, 0, 1, 0, 9, 0}, uint8(ModeResponse)},
		{chunkedResp + "100\r\n" + strings.Repeat("x", 256) + "\r\n0\r\n\r\n", []byte{0xfe, 0x90, 0xff, 0}, uint8(ModeResponse)},
		{"HTTP/1.0 200 OK\r\n\r\nclose delimited body", []byte{25, 0, 0xff, 0x85}, uint8(ModeResponse)},
		{"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcHTTP/1.1 204 No Content\r\n\r\n", []byte{0xff, 0x06}, uint8(ModeResponse)},
		{"POST /u HTTP/1.1\r\nContent-Length: 10\r\nCookie: " + strings.Repeat("c", 300) + "\r\n\r\n0123456789GET / HTTP/1.1\r\n\r\n", []byte{0xfe, 0x88, 0xff, 0}, uint8(ModeRequest)},
		{"GET /big HTTP/1.1\r\nContent-Length: 2\r\nX: " + strings.Repeat("a", 100) + "\r\n\r\nokGET / HTTP/1.1\r\n\r\n", []byte{30, 0, 0xff, 0}, 0x40 | uint8(ModeRequest)},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX: " + strings.Repeat("a", 100) + "\r\n\r\n1\r\nx\r\n0\r\n\r\n", nil, 0x40 | uint8(ModeResponse)},
		{"CONNECT h:443 HTTP/1.1\r\n\r\n\x16\x03\x01\x00", []byte{10, 0, 0xff, 0}, uint8(ModeDetect)},
		{"HTTP/1.1 101 Switching Protocols\r\n\r\n\x81\x00", nil, uint8(ModeResponse)},
		{"junk\r\nGET / HTTP/1.1\r\n\r\n", []byte{6, 0, 0xff, 0}, 0x80 | uint8(ModeRequest)},
		{"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", nil, uint8(ModeDetect)},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", []byte{1, 0, 0xff, 0}, uint8(ModeDetect)},
		{"*1\r\n$4\r\nPING\r\n", nil, uint8(ModeRequest)},
		{"\x00\x00\x00\x08\x04\xd2\x16\x2f", nil, uint8(ModeDetect)},
		{"HTTP/1.1 abc OK\r\n\r\n", nil, uint8(ModeResponse)},
	}
	for _, s := range seeds {
		f.Add([]byte(s.data), s.plan, s.mode)
	}
	f.Fuzz(func(t *testing.T, data, plan []byte, mode uint8) {
		// Longer inputs add little (the 0x40 mode bit reaches the head
		// limit) and slow every execution and minimisation.
		data = data[:min(len(data), 8<<10)]
		p := NewParser(Mode(mode & 3))
		if mode&0x80 != 0 {
			p.StartMidStream()
		}
		if mode&0x40 != 0 {
			p.maxHead = 64 // reach the head limit without huge inputs
		}
		var openStart uint64 // StartTS of a message reported by PhaseHead only
		check := func(ev []Message, ts uint64) {
			for _, m := range ev {
				checkInvariants(t, m, ts)
				switch {
				case m.Phase == PhaseHead && openStart != 0:
					t.Fatalf("second head event before the first message ended: %+v", m)
				case m.Phase == PhaseHead:
					openStart = m.StartTS
				case openStart != 0 && m.StartTS != openStart:
					t.Fatalf("terminal event for another message than the open one: %+v", m)
				default:
					openStart = 0
				}
			}
			if len(p.head) > p.maxHead || cap(p.head) > 2*MaxHeadBytes {
				t.Fatalf("head buffer len %d cap %d", len(p.head), cap(p.head))
			}
			if p.mLen < 0 || p.mLen > MethodQueueLen {
				t.Fatalf("method queue length %d", p.mLen)
			}
		}
		ts := uint64(0)
		for len(data) > 0 {
			ts++
			a, b := byte(0xff), byte(0)
			if len(plan) >= 2 {
				a, b, plan = plan[0], plan[1], plan[2:]
			}
			n := len(data)
			if a != 0xff {
				n = 1 + int(a)%len(data)
			}
			c := n
			if b&0x80 != 0 {
				c = n * int(b&0x78) / 0x80
			}
			switch b & 7 {
			case 1:
				p.PushRequestMethod("GET")
			case 2:
				p.PushRequestMethod("HEAD")
			case 3:
				p.PushRequestMethod("CONNECT")
			}
			ev := p.Feed(data[:c], n, ts)
			if p.NotHTTP() && ev != nil {
				t.Fatalf("events from a non-HTTP stream: %+v", ev)
			}
			check(ev, ts)
			data = data[n:]
		}
		ts++
		check(p.Close(ts), ts)
		if openStart != 0 {
			t.Fatal("message left open after Close")
		}
	})
}

func checkInvariants(t *testing.T, m Message, ts uint64) {
	bad := func(what string) { t.Fatalf("%s: %+v", what, m) }
	switch m.Phase {
	case PhaseHead, PhaseDone, PhaseAborted:
	default:
		bad("invalid phase")
	}
	if m.Complete != (m.Phase == PhaseDone) {
		bad("Complete disagrees with Phase")
	}
	if m.Complete && (m.EndTS == 0 || m.HeadTS == 0 || m.Err != nil) {
		bad("complete message without EndTS or HeadTS, or with an error")
	}
	if !m.Complete && m.EndTS != 0 {
		bad("EndTS on an incomplete message")
	}
	if (m.Phase == PhaseAborted) != (m.Err != nil) {
		bad("Err set unless aborted")
	}
	if m.Phase == PhaseHead && m.HeadTS == 0 {
		bad("head event without HeadTS")
	}
	if m.BodyBytes < 0 || m.ContentLength < -1 {
		bad("negative size")
	}
	if m.StartTS == 0 || m.StartTS > ts || m.HeadTS > ts || m.EndTS > ts ||
		(m.HeadTS != 0 && m.HeadTS < m.StartTS) || (m.EndTS != 0 && m.EndTS < m.HeadTS) {
		bad("timestamps out of order")
	}
	if m.IsRequest != (m.Method != "") || (!m.IsRequest && (m.StatusCode < 100 || m.StatusCode > 999)) {
		bad("request/response fields")
	}
	if m.Interim && (m.IsRequest || m.StatusCode >= 200 || !m.Complete) {
		bad("interim")
	}
	if m.ProtoMajor != 1 || m.ProtoMinor < 0 || m.ProtoMinor > 9 {
		bad("version")
	}
}
