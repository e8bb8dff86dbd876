// Package qemu boots a stock kernel under QEMU with a generated busybox
// initramfs and runs one command in it. It exists to test weft's kprobe
// path end to end on kernels the host cannot provide (the CI host runs a
// kernel without CONFIG_KPROBES).
//
// Typical use from a test:
//
//	kernels, err := qemu.Kernels(ctx) // newest Debian 6.1 and 6.12
//	...
//	res, err := qemu.Run(ctx, qemu.Config{
//		Kernel:   kernels[0].Path,
//		Binaries: map[string]string{"/weft": staticBinary},
//		Command:  []string{"/weft", "--version"},
//	})
//	// err: the guest never reported; res.ExitCode: the command's status.
//
// The guest has busybox, proc, sysfs, devtmpfs, tracefs, debugfs, bpffs
// and cgroup2 mounted, and lo up; it has no other network and no modules.
package qemu

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults applied to zero Config fields.
const (
	DefaultTimeout  = 3 * time.Minute
	DefaultMemoryMB = 1024
	// DefaultCPUs is one: under software emulation a second vCPU that runs
	// through code the kernel is live-patching (attaching tracepoints and
	// kprobes flips static keys through int3) was seen to oops the guest.
	DefaultCPUs = 1
)

// Config describes one boot.
type Config struct {
	// Kernel is the host path of a bzImage, e.g. from Kernels.
	Kernel string
	// Binaries maps a guest path to the host path of a static binary to
	// copy there (mode 0755).
	Binaries map[string]string
	// Files maps a guest path to file contents (mode 0644).
	Files map[string][]byte
	// HostFiles maps a guest path to a host file copied there as it is
	// (mode 0755): a dynamically linked program with its loader and
	// libraries (see DynamicProgram).
	HostFiles map[string]string
	// Command is run once in the guest as root; it must not be empty.
	Command []string
	// Env holds extra NAME=value entries for Command.
	Env []string
	// Timeout bounds the whole boot; qemu is killed when it expires.
	Timeout time.Duration
	// MemoryMB is guest RAM; the initramfs is unpacked into it.
	MemoryMB int
	// CPUs is the guest vCPU count.
	CPUs int
	// KernelArgs are appended to the kernel command line.
	KernelArgs []string
	// Accel is AccelKVM or AccelTCG; empty picks KVM when usable.
	Accel string
	// Console, if set, receives the console output as it arrives.
	Console io.Writer
}

// Result is the outcome of a boot in which the command ran to completion.
type Result struct {
	// ExitCode is the guest command's exit status.
	ExitCode int
	// Output is the whole serial console (kernel and command), with CRLF
	// turned into LF.
	Output string
	// CommandOutput is the part of Output the command printed.
	CommandOutput string
	// Duration is the time from starting qemu to its exit.
	Duration time.Duration
	// Accel is the accelerator that was used.
	Accel string
}

// Run boots cfg.Kernel, runs cfg.Command and returns its exit status. A
// non-zero guest exit code is not an error; a boot that never reports one
// (panic, timeout, qemu failure) is, and the error quotes the console tail.
func Run(ctx context.Context, cfg Config) (Result, error) {
	res, err := run(ctx, cfg)
	if err != nil {
		return res, fmt.Errorf("boot %s: %w", kernelName(cfg.Kernel), err)
	}
	return res, nil
}

func run(ctx context.Context, cfg Config) (Result, error) {
	if err := applyDefaults(&cfg); err != nil {
		return Result{}, err
	}
	qemuBin, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		return Result{}, fmt.Errorf("%w (test/qemu/kernels.sh installs it)", err)
	}
	accel, err := chooseAccel(cfg.Accel)
	if err != nil {
		return Result{}, err
	}
	nonce, err := newNonce()
	if err != nil {
		return Result{}, err
	}
	dir, err := os.MkdirTemp("", "weft-qemu-")
	if err != nil {
		return Result{}, fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(dir)

	initrd := filepath.Join(dir, "initramfs.cpio.gz")
	script, err := initScript(cfg.Command, cfg.Env, nonce)
	if err != nil {
		return Result{}, err
	}
	files := defaultFiles()
	for p := range cfg.Binaries {
		delete(files, p)
	}
	for p, b := range cfg.Files {
		files[p] = b
	}
	binaries := maps.Clone(cfg.Binaries)
	if binaries == nil {
		binaries = map[string]string{}
	}
	maps.Copy(binaries, cfg.HostFiles)
	if err := writeInitramfs(initrd, initramfs{init: script, binaries: binaries, files: files}); err != nil {
		return Result{}, err
	}

	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, qemuBin, qemuArgs(cfg, accel, initrd)...)
	var out bytes.Buffer
	var w io.Writer = &out
	if cfg.Console != nil {
		w = io.MultiWriter(&out, cfg.Console)
	}
	// One writer for both streams keeps qemu's own errors in order with
	// the console.
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	runErr := cmd.Run()
	res := Result{Duration: time.Since(start), Accel: accel}
	res.Output = strings.ReplaceAll(out.String(), "\r\n", "\n")

	code, cmdOut, ok := parseConsole(res.Output, nonce)
	if !ok {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return res, fmt.Errorf("no exit marker after %s, qemu killed (accel %s)\n%s",
				res.Duration.Round(time.Millisecond), accel, consoleTail(res.Output))
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("qemu killed: %w", ctx.Err())
		}
		if runErr != nil {
			return res, fmt.Errorf("qemu: %w; no exit marker on the console\n%s", runErr, consoleTail(res.Output))
		}
		what := "guest stopped without reporting an exit code"
		if strings.Contains(res.Output, "Kernel panic") {
			what = "kernel panicked before the command reported an exit code"
		}
		return res, fmt.Errorf("%s\n%s", what, consoleTail(res.Output))
	}
	// A found marker wins over a qemu error: the command finished, and only
	// the power-off went wrong.
	res.ExitCode, res.CommandOutput = code, cmdOut
	return res, nil
}

// kernelName labels errors: the release directory for cached kernels
// (.cache/<kver>/vmlinuz), else the file name.
func kernelName(path string) string {
	if filepath.Base(path) == "vmlinuz" {
		return filepath.Base(filepath.Dir(path))
	}
	return filepath.Base(path)
}

func applyDefaults(cfg *Config) error {
	if len(cfg.Command) == 0 {
		return errors.New("config: empty Command")
	}
	if _, err := os.Stat(cfg.Kernel); err != nil {
		return fmt.Errorf("kernel: %w", err)
	}
	for p, host := range cfg.Binaries {
		if err := checkGuestPath(p); err != nil {
			return err
		}
		if err := checkStaticAMD64(host); err != nil {
			return fmt.Errorf("binary for %s: %w", p, err)
		}
	}
	for p := range cfg.Files {
		if err := checkGuestPath(p); err != nil {
			return err
		}
		if _, dup := cfg.Binaries[p]; dup {
			return fmt.Errorf("guest path %s is in both Binaries and Files", p)
		}
	}
	for p := range cfg.HostFiles {
		if err := checkGuestPath(p); err != nil {
			return err
		}
		_, inBinaries := cfg.Binaries[p]
		_, inFiles := cfg.Files[p]
		if inBinaries || inFiles {
			return fmt.Errorf("guest path %s is in HostFiles and Binaries or Files", p)
		}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MemoryMB <= 0 {
		cfg.MemoryMB = DefaultMemoryMB
	}
	if cfg.CPUs <= 0 {
		cfg.CPUs = DefaultCPUs
	}
	return nil
}

func qemuArgs(cfg Config, accel, initrd string) []string {
	// panic=-1 reboots at once on panic and -no-reboot turns that into a
	// qemu exit, so a crashed guest ends the run instead of hanging it.
	appendLine := append([]string{"console=ttyS0", "panic=-1", "quiet"}, cfg.KernelArgs...)
	return []string{
		// Only the serial port is wanted: no VGA, NIC or disks to probe.
		"-nodefaults", "-no-user-config", "-display", "none",
		"-serial", "stdio", "-no-reboot",
		"-accel", accel,
		"-cpu", cpuModel(accel),
		"-m", strconv.Itoa(cfg.MemoryMB),
		"-smp", strconv.Itoa(cfg.CPUs),
		"-kernel", cfg.Kernel,
		"-initrd", initrd,
		"-append", strings.Join(appendLine, " "),
	}
}

// cpuModel picks the richest CPU model per accelerator: "host" passes the
// real CPU through under KVM, "max" enables every feature TCG emulates.
func cpuModel(accel string) string {
	if accel == AccelKVM {
		return "host"
	}
	return "max"
}

func newNonce() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("nonce: %w", err)
	}
	return hex.EncodeToString(b), nil
}
