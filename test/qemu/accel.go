package qemu

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Accelerators understood by Config.Accel and WEFT_QEMU_ACCEL.
const (
	AccelKVM = "kvm"
	AccelTCG = "tcg" // software emulation: slow but needs nothing from the host
)

// ioctl numbers from <linux/kvm.h>: _IO(KVMIO=0xAE, 0x00) and _IO(0xAE, 0x01).
const (
	kvmGetAPIVersion = 0xAE00
	kvmCreateVM      = 0xAE01
	kvmAPIVersion    = 12
)

// chooseAccel resolves the accelerator: an explicit choice wins, then
// WEFT_QEMU_ACCEL, then KVM when the host can really create a VM.
func chooseAccel(explicit string) (string, error) {
	want := explicit
	if want == "" {
		want = os.Getenv("WEFT_QEMU_ACCEL")
	}
	switch want {
	case AccelKVM, AccelTCG:
		return want, nil
	case "":
		if kvmUsable() == nil {
			return AccelKVM, nil
		}
		return AccelTCG, nil
	default:
		return "", fmt.Errorf("accelerator %q: want %q or %q", want, AccelKVM, AccelTCG)
	}
}

// kvmUsable requires hardware virtualisation in /proc/cpuinfo and a VM
// that can be created. /dev/kvm alone is not proof: inside a Firecracker
// VM it exists and creates VMs, but without vmx/svm exposed the guest
// hangs in early boot (and -cpu max aborts setting MSR 0x10a).
func kvmUsable() error {
	cpuinfo, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return fmt.Errorf("kvm: %w", err)
	}
	if !hasCPUFlag(string(cpuinfo), "vmx") && !hasCPUFlag(string(cpuinfo), "svm") {
		return errors.New("kvm: no vmx or svm flag in /proc/cpuinfo")
	}
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("kvm: %w", err)
	}
	defer f.Close()
	v, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), kvmGetAPIVersion, 0)
	if errno != 0 {
		return fmt.Errorf("kvm: KVM_GET_API_VERSION: %w", errno)
	}
	if v != kvmAPIVersion {
		return fmt.Errorf("kvm: API version %d, want %d", v, kvmAPIVersion)
	}
	vm, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), kvmCreateVM, 0)
	if errno != 0 {
		return fmt.Errorf("kvm: KVM_CREATE_VM: %w", errno)
	}
	return syscall.Close(int(vm))
}

// hasCPUFlag reports whether any "flags" line of cpuinfo lists flag.
func hasCPUFlag(cpuinfo, flag string) bool {
	for _, line := range strings.Split(cpuinfo, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(key) != "flags" {
			continue
		}
		for _, f := range strings.Fields(val) {
			if f == flag {
				return true
			}
		}
	}
	return false
}
