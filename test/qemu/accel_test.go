package qemu

import "testing"

func TestHasCPUFlag(t *testing.T) {
	const cpuinfo = "processor\t: 0\nflags\t\t: fpu vme vmxx sse2\nbugs\t\t: vmx\n"
	if hasCPUFlag(cpuinfo, "vmx") {
		t.Error("matched a flag prefix or a non-flags line")
	}
	if !hasCPUFlag(cpuinfo, "sse2") {
		t.Error("missed sse2")
	}
}

func TestChooseAccel(t *testing.T) {
	t.Setenv("WEFT_QEMU_ACCEL", AccelTCG)
	if a, err := chooseAccel(""); err != nil || a != AccelTCG {
		t.Errorf("env tcg: got %q, %v", a, err)
	}
	if a, err := chooseAccel(AccelKVM); err != nil || a != AccelKVM {
		t.Errorf("explicit kvm: got %q, %v", a, err)
	}
	if _, err := chooseAccel("hvf"); err == nil {
		t.Error("unknown accelerator accepted")
	}
}
