package main

import (
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
		"attach path       " + string(want),
		"verifier kprobe     ok",
		"verifier tracepoint ok",
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
