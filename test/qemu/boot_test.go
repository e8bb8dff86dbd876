package qemu

import (
	"context"
	"strings"
	"testing"
	"time"
)

const bootTimeout = 2 * time.Minute

// The harness must deliver files, binaries and environment to the guest and
// report the command's exit status and output, on every kernel.
func TestBootExitCode(t *testing.T) {
	kernels := testKernels(t)
	bin := buildGuest(t, "exitcode")
	const greeting = `it's "quoted" $HOME`
	for _, k := range kernels {
		t.Run(k.Release, func(t *testing.T) {
			res := boot(t, Config{
				Kernel:   k.Path,
				Binaries: map[string]string{"/usr/local/bin/exitcode": bin},
				Files:    map[string][]byte{"/etc/weft/note": []byte("note from the host\n")},
				Command:  []string{"sh", "-c", "cat /etc/weft/note && exec exitcode"},
				Env:      []string{"WEFT_GREETING=" + greeting},
				Timeout:  bootTimeout,
			})
			if res.ExitCode != 3 {
				t.Errorf("exit code %d, want 3", res.ExitCode)
			}
			for _, want := range []string{
				"note from the host\n",
				"hello from the guest, release=" + k.Release + "\n",
				"greeting=" + greeting + "\n",
			} {
				if !strings.Contains(res.CommandOutput, want) {
					t.Errorf("command output lacks %q:\n%s", want, res.CommandOutput)
				}
			}
		})
	}
}

// Each kernel must offer what weft's kprobe path needs: loopback TCP, BTF,
// and a working kprobe on tcp_sendmsg.
func TestBootKprobePrerequisites(t *testing.T) {
	kernels := testKernels(t)
	bin := buildGuest(t, "loopback")
	for _, k := range kernels {
		t.Run(k.Release, func(t *testing.T) {
			res := boot(t, Config{
				Kernel:   k.Path,
				Binaries: map[string]string{"/loopback": bin},
				Command:  []string{"/loopback"},
				Timeout:  bootTimeout,
			})
			if res.ExitCode != 0 {
				t.Errorf("loopback exited %d:\n%s", res.ExitCode, res.CommandOutput)
			}
			if !strings.Contains(res.CommandOutput, "ok kprobe on tcp_sendmsg") {
				t.Errorf("kprobe check did not report ok:\n%s", res.CommandOutput)
			}
		})
	}
}

// A guest that dies before the exit marker must yield an error quoting
// the console, not a zero exit code.
func TestBootPanicIsError(t *testing.T) {
	k := testKernels(t)[0]
	res, err := Run(context.Background(), Config{
		Kernel:  k.Path,
		Command: []string{"sh", "-c", "echo c >/proc/sysrq-trigger"},
		Timeout: bootTimeout,
	})
	if err == nil {
		t.Fatalf("no error; exit code %d, console:\n%s", res.ExitCode, res.Output)
	}
	if !strings.Contains(err.Error(), "kernel panicked") || !strings.Contains(err.Error(), "sysrq triggered crash") {
		t.Errorf("error does not quote the panic:\n%v", err)
	}
	t.Logf("took %s; error:\n%v", res.Duration.Round(time.Millisecond), err)
}

// A hung guest must be killed at the timeout.
func TestBootTimeoutKills(t *testing.T) {
	k := testKernels(t)[0]
	const timeout = 3 * time.Second
	res, err := Run(context.Background(), Config{
		Kernel:  k.Path,
		Command: []string{"sleep", "3600"},
		Timeout: timeout,
	})
	if err == nil || !strings.Contains(err.Error(), "no exit marker after") {
		t.Fatalf("want a timeout error, got %v", err)
	}
	if res.Duration > timeout+10*time.Second {
		t.Errorf("qemu ran %s past a %s timeout", res.Duration, timeout)
	}
}
