package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/testenv"
)

func TestDoctorOnThisKernel(t *testing.T) {
	testenv.RequirePrivileged(t)
	var out strings.Builder
	if err := doctor(&out, true); err != nil {
		t.Fatalf("doctor found problems: %v\n%s", err, out.String())
	}
	f := kernel.Probe()
	want, _ := f.ChoosePath("auto")
	for _, line := range []string{
		"BTF (CO-RE)       yes",
		"BPF floor         yes",
		"attach path       " + string(want),
		"verifier kprobe     ok",
		"verifier tracepoint ok",
		"verifier syscalls   ok",
		"injection         possible",
		"weft can run here.",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("doctor output lacks %q:\n%s", line, out.String())
		}
	}
	if strings.Contains(out.String(), "lockdown          unknown") {
		t.Errorf("lockdown mode not read:\n%s", out.String())
	}
}

// doctor --pid names the correlation of a Go program (goroutine) and of a
// program in another language (thread), and refuses a pid that is not one.
func TestDoctorPIDs(t *testing.T) {
	self := os.Getpid() // this test binary is a Go program
	sh := exec.Command("sleep", "30")
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	defer sh.Process.Kill()
	var out bytes.Buffer
	if err := doctorPIDs(&out, fmt.Sprintf("%d,%d", self, sh.Process.Pid)); err != nil {
		t.Fatalf("doctorPIDs: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		fmt.Sprintf("process %d (", self), "correlation goroutine — go1.",
		fmt.Sprintf("process %d (", sh.Process.Pid), "correlation thread — not a Go program",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := doctorPIDs(&out, "x,999999999"); err == nil {
		t.Error("bad pids accepted")
	}
}
