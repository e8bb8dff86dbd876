package h2

import "testing"

// Any bytes, cut anywhere, with any uncaptured tail, as prefix captures or
// as the kernel's frame copies, fed to a connection in both directions:
// no panic, and once lost nothing more is reported.
func FuzzParser(f *testing.F) {
	f.Add([]byte(ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00"), uint8(3), uint16(0), true, false)
	f.Add([]byte("\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64"), uint8(1), uint16(10), false, false)
	f.Add([]byte("\x00\x00\x05\x01\x0d\x00\x00\x00\x01\x02\x82\x84\x00\x00"), uint8(2), uint16(0), false, true)
	f.Add([]byte(ClientPreface+"\x00\x00\x05\x01\x05\x00\x00\x00\x01\x82\x84\x86\x41\x00\x00\x00\x10\x00\x01\x00\x00\x00\x01"), uint8(7), uint16(0), true, true)
	f.Fuzz(func(t *testing.T, b []byte, cut uint8, uncaptured uint16, client, frames bool) {
		p := NewParser(client)
		c := NewConn()
		if frames {
			p, c = NewFramesParser(client), NewFramesConn()
		}
		step := int(cut) + 1
		for i := 0; len(b) > 0; i++ {
			n := min(step, len(b))
			total := n
			if !frames {
				total += int(uncaptured) % 3 * int(uncaptured)
			}
			wasLost := p.Lost() != nil
			evs := p.Feed(b[:n], total, 1)
			if wasLost && len(evs) > 0 {
				t.Fatalf("events after the parser was lost: %v", evs)
			}
			connLost := c.Lost() != nil
			var done []Exchange
			if i%2 == 0 {
				done = c.FeedRequest(b[:n], total, uint64(i))
			} else {
				done = c.FeedResponse(b[:n], total, uint64(i))
			}
			if connLost && len(done) > 0 {
				t.Fatalf("exchanges after the connection was lost: %v", done)
			}
			if c.Open() > MaxOpenStreams {
				t.Fatalf("%d open streams", c.Open())
			}
			b = b[n:]
		}
	})
}
