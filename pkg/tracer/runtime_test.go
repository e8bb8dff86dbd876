package tracer

import (
	"testing"

	"github.com/weftdev/weft/pkg/goexec"
	"github.com/weftdev/weft/pkg/testenv"
)

// Classifying a process keeps what the kernel side noted in its proc_mode
// entry: without its TLS bits its socket calls nested in TLS calls would
// pass for plaintext, without h2 its HTTP/2 connections' calls would skip
// their walk, without clients a Go program's sends would not note
// their goroutine for injection, and without calls_out its goroutines'
// creation would go unfollowed (and it is reported, gocreation.go). An
// agent's mode, set by its first packet, rules.
func TestSetModeKeepsKernelNotes(t *testing.T) {
	testenv.RequirePrivileged(t)
	tr := openTestTracer(t, Options{})
	const pid = 0x7ffffff0 // no process's: fork and exit leave it alone
	goProc := Correlation{Mode: ModeGo, g: goexec.GOffsets{Goid: 152, ParentGoid: 160}}
	for _, tc := range []struct {
		name     string
		cur      *tpProcInfo // nil: no entry
		c        Correlation
		wantMode Mode
		callsOut bool
		want     tpProcInfo
	}{
		{"no entry", nil, goProc, ModeGo, false,
			tpProcInfo{Mode: uint8(ModeGo), GoidOff: 152, ParentGoidOff: 160}},
		{"marked before classification", &tpProcInfo{Clients: 1, Tls: 3, H2: 1}, goProc, ModeGo, false,
			tpProcInfo{Mode: uint8(ModeGo), Clients: 1, GoidOff: 152, ParentGoidOff: 160, Tls: 3, H2: 1}},
		{"connected before classification", &tpProcInfo{CallsOut: 1}, goProc, ModeGo, true,
			tpProcInfo{Mode: uint8(ModeGo), GoidOff: 152, ParentGoidOff: 160, CallsOut: 1}},
		{"classified again", &tpProcInfo{Mode: uint8(ModeGo), GoidOff: 1, ParentGoidOff: 2, H2: 1}, Correlation{Mode: ModeThread}, ModeThread, false,
			tpProcInfo{Mode: uint8(ModeThread), H2: 1}},
		{"an agent's", &tpProcInfo{Mode: uint8(ModeAgent), Tls: 1}, Correlation{Mode: ModeThread}, ModeAgent, false,
			tpProcInfo{Mode: uint8(ModeAgent), Tls: 1}},
		{"becomes an agent's", &tpProcInfo{Mode: uint8(ModeThread), H2: 1}, Correlation{Mode: ModeAgent}, ModeAgent, false,
			tpProcInfo{Mode: uint8(ModeAgent), H2: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr.objs.ProcMode.Delete(uint32(pid))
			t.Cleanup(func() { tr.objs.ProcMode.Delete(uint32(pid)) })
			if tc.cur != nil {
				if err := tr.objs.ProcMode.Put(uint32(pid), *tc.cur); err != nil {
					t.Fatal(err)
				}
			}
			mode, callsOut, err := tr.setMode(pid, tc.c)
			if err != nil {
				t.Fatal(err)
			}
			var got tpProcInfo
			if err := tr.objs.ProcMode.Lookup(uint32(pid), &got); err != nil {
				t.Fatal(err)
			}
			if mode != tc.wantMode || callsOut != tc.callsOut || got != tc.want {
				t.Errorf("setMode(%v) over %+v = %v, %v, entry %+v; want %v, %v, %+v", tc.c.Mode, tc.cur, mode, callsOut, got,
					tc.wantMode, tc.callsOut, tc.want)
			}
		})
	}
}
