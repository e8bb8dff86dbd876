package tracer

import "testing"

// Re-classifying a process keeps what the kernel side noted in its
// proc_mode entry: without its TLS bits its socket calls nested in TLS
// calls would pass for plaintext, without h2 its HTTP/2 connections'
// calls would skip their walk, and without clients a Go program's sends
// would not note their goroutine for injection.
func TestInfoKeepingKeepsKernelNotes(t *testing.T) {
	cur := tpProcInfo{Mode: uint8(ModeThread), Clients: 1, Tls: 3, H2: 1, GoidOff: 1}
	c := Correlation{Mode: ModeGo}
	got := c.infoKeeping(cur)
	want := tpProcInfo{Mode: uint8(ModeGo), Clients: 1, Tls: 3, H2: 1}
	if got != want {
		t.Errorf("infoKeeping(%+v) = %+v, want %+v", cur, got, want)
	}
}
