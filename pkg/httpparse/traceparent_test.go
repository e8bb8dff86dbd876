package httpparse

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseTraceParent(t *testing.T) {
	const (
		tid = "4bf92f3577b34da6a3ce929d0e0e4736"
		sid = "00f067aa0ba902b7"
	)
	cases := []struct {
		name  string
		in    string
		ok    bool
		flags byte
	}{
		{"valid sampled", "00-" + tid + "-" + sid + "-01", true, 0x01},
		{"valid not sampled", "00-" + tid + "-" + sid + "-00", true, 0x00},
		{"unknown flags kept", "00-" + tid + "-" + sid + "-ff", true, 0xff},
		{"upper-case trace id", "00-" + strings.ToUpper(tid) + "-" + sid + "-01", false, 0},
		{"upper-case span id", "00-" + tid + "-00F067AA0BA902B7-01", false, 0},
		{"upper-case flags", "00-" + tid + "-" + sid + "-0A", false, 0},
		{"upper-case version", "0A-" + tid + "-" + sid + "-01", false, 0},
		{"zero trace id", "00-" + strings.Repeat("0", 32) + "-" + sid + "-01", false, 0},
		{"zero span id", "00-" + tid + "-" + strings.Repeat("0", 16) + "-01", false, 0},
		{"version ff", "ff-" + tid + "-" + sid + "-01", false, 0},
		{"short trace id", "00-" + tid[:30] + "-" + sid + "-01", false, 0},
		{"long trace id", "00-" + tid + "ab-" + sid + "-01", false, 0},
		{"short span id", "00-" + tid + "-" + sid[:15] + "-01", false, 0},
		{"short flags", "00-" + tid + "-" + sid + "-1", false, 0},
		{"version 00 with suffix", "00-" + tid + "-" + sid + "-01-extra", false, 0},
		{"future version with suffix", "01-" + tid + "-" + sid + "-01-what-ever", true, 0x01},
		{"future version exact", "cc-" + tid + "-" + sid + "-01", true, 0x01},
		{"future version bad suffix", "01-" + tid + "-" + sid + "-01x", false, 0},
		{"wrong separators", "00_" + tid + "_" + sid + "_01", false, 0},
		{"non-hex", "00-" + tid[:31] + "g-" + sid + "-01", false, 0},
		{"empty", "", false, 0},
	}
	wantTID, _ := hex.DecodeString(tid)
	wantSID, _ := hex.DecodeString(sid)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			gotT, gotS, flags, ok := ParseTraceParent(c.in)
			if ok != c.ok {
				t.Fatalf("ok = %v, want %v", ok, c.ok)
			}
			if !ok {
				if gotT != [16]byte{} || gotS != [8]byte{} || flags != 0 {
					t.Fatal("non-zero results on failure")
				}
				return
			}
			if string(gotT[:]) != string(wantTID) || string(gotS[:]) != string(wantSID) || flags != c.flags {
				t.Fatalf("got %x %x %02x", gotT, gotS, flags)
			}
		})
	}
}
