package h2

import "testing"

// Any bytes, cut anywhere, with any uncaptured tail: no panic, and once
// lost the parser reports nothing more.
func FuzzParser(f *testing.F) {
	f.Add([]byte(ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00"), uint8(3), uint16(0), true)
	f.Add([]byte("\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64"), uint8(1), uint16(10), false)
	f.Add([]byte("\x00\x00\x05\x01\x0d\x00\x00\x00\x01\x02\x82\x84\x00\x00"), uint8(2), uint16(0), false)
	f.Fuzz(func(t *testing.T, b []byte, cut uint8, uncaptured uint16, client bool) {
		p := NewParser(client)
		step := int(cut) + 1
		for len(b) > 0 {
			n := min(step, len(b))
			wasLost := p.Lost() != nil
			evs := p.Feed(b[:n], n+int(uncaptured)%3*int(uncaptured), 1)
			if wasLost && len(evs) > 0 {
				t.Fatalf("events after the parser was lost: %v", evs)
			}
			b = b[n:]
		}
	})
}
