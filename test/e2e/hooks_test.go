package e2e

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/kernel"
)

// bpftoolJSON runs bpftool with -j and decodes its answer.
func bpftoolJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	b, err := exec.Command("bpftool", append([]string{"-j"}, args...)...).Output()
	if err != nil {
		t.Fatalf("bpftool %s: %v", strings.Join(args, " "), err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("bpftool %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// Where the kernel has sock_{send,recv}_length, weft in its default
// configuration (propagation, runtime hooks, profiler) attaches no
// syscalls:* tracepoint, which would put every task on the host on the
// slow system-call path: read from the kernel's own listing of the
// tracepoints weft holds (bpftool perf list).
func TestNoSyscallTracepointsByDefault(t *testing.T) {
	setup(t)
	if p, _ := kernel.Probe().ChoosePath("auto"); p != kernel.PathTracepoint {
		t.Skipf("this kernel's default path is %s, not the socket-only tracepoint path", p)
	}
	w := startWeft(t, nil)

	var perf []struct {
		PID        int    `json:"pid"`
		FDType     string `json:"fd_type"`
		Tracepoint string `json:"tracepoint"`
	}
	bpftoolJSON(t, &perf, "perf", "list")
	var held []string
	for _, e := range perf {
		if e.PID != w.Pid() {
			continue
		}
		held = append(held, e.FDType+":"+e.Tracepoint)
		if strings.HasPrefix(e.Tracepoint, "sys_enter_") || strings.HasPrefix(e.Tracepoint, "sys_exit_") {
			t.Errorf("weft attached the syscall tracepoint %s", e.Tracepoint)
		}
	}
	// The listing is weft's, and the socket programs are in it (tp_btf
	// programs are listed as raw tracepoints).
	for _, want := range []string{"tracepoint:inet_sock_set_state", "raw_tracepoint:sock_send_length", "raw_tracepoint:sock_recv_length"} {
		if !slices.Contains(held, want) {
			t.Errorf("weft's tracepoints lack %s: %v", want, held)
		}
	}
}
