package kernel

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// Features is what weft found out about the running kernel.
type Features struct {
	Release  string
	BTF      bool   // /sys/kernel/btf/vmlinux: CO-RE relocations can resolve
	Kprobes  bool   // the kprobe PMU exists: kprobes can attach
	Lockdown string // none, integrity or confidentiality
	Tracefs  string // mount point, empty when not mounted
	CgroupV2 string // mount point of the unified hierarchy, empty when absent
	Bpffs    string // mount point, empty when not mounted
	// SockLengthTracepoints: sock:sock_{send,recv}_length (Linux 6.3+),
	// which the tracepoint path needs to tell sockets from files.
	SockLengthTracepoints bool
	// SkMsgReadsRegs: sk_msg programs may read the sender's registers and
	// memory (bpf_get_current_task_btf, bpf_task_pt_regs,
	// bpf_probe_read_user), which the socket-only tracepoint path needs
	// to inject without a syscall entry hook. Probed by loading small
	// programs: false without the privileges weft runs with.
	SkMsgReadsRegs bool
}

// Probe reads the kernel's features from /sys and /proc. It never fails:
// what it cannot read is reported as missing.
func Probe() Features {
	var f Features
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		f.Release = strings.TrimSpace(string(b))
	}
	_, err := os.Stat("/sys/kernel/btf/vmlinux")
	f.BTF = err == nil
	// cilium/ebpf attaches kprobes through this PMU, or through tracefs'
	// kprobe_events on older kernels; either needs CONFIG_KPROBES.
	if _, err := os.Stat("/sys/bus/event_source/devices/kprobe/type"); err == nil {
		f.Kprobes = true
	}
	f.Lockdown = lockdown()
	f.Tracefs, _ = FindMount("tracefs")
	f.CgroupV2, _ = FindMount("cgroup2")
	f.Bpffs, _ = FindMount("bpf")
	if f.Tracefs != "" {
		_, err := os.Stat(f.Tracefs + "/events/sock/sock_send_length")
		f.SockLengthTracepoints = err == nil
	}
	f.SkMsgReadsRegs = skMsgReadsRegs()
	return f
}

func skMsgReadsRegs() bool {
	for _, h := range []asm.BuiltinFunc{asm.FnGetCurrentTaskBtf, asm.FnTaskPtRegs, asm.FnProbeReadUser} {
		if features.HaveProgramHelper(ebpf.SkMsg, h) != nil {
			return false
		}
	}
	return true
}

// lockdown returns the active mode from "none [integrity] confidentiality".
func lockdown() string {
	dir, err := FindMount("securityfs")
	if err != nil {
		return "unknown (securityfs not mounted)"
	}
	b, err := os.ReadFile(dir + "/lockdown")
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "none" // the lockdown LSM is not built in
		}
		return "unknown"
	}
	return ParseLockdown(string(b))
}

// ParseLockdown picks the bracketed, active mode.
func ParseLockdown(s string) string {
	i := strings.IndexByte(s, '[')
	j := strings.IndexByte(s, ']')
	if i < 0 || j <= i {
		return "unknown"
	}
	return s[i+1 : j]
}

// Path names a set of attach points.
type Path string

const (
	// PathKprobe: kprobes on tcp_sendmsg/tcp_recvmsg.
	PathKprobe Path = "kprobe"
	// PathTracepoint: the sock_{send,recv}_length tracepoints alone, the
	// call's buffer read from its registers; no syscall tracepoint.
	PathTracepoint Path = "tracepoint"
	// PathSyscalls: syscall tracepoints around the sock tracepoints, for
	// kernels whose sk_msg programs cannot read registers. Any syscall
	// tracepoint puts every task on the host on the slow syscall path.
	PathSyscalls Path = "syscalls"
)

// Paths are all attach paths, in the order auto prefers them.
var Paths = []Path{PathKprobe, PathTracepoint, PathSyscalls}

// ChoosePath picks the attach path for a --probes value.
func (f Features) ChoosePath(want string) (Path, error) {
	noSock := errors.New("no sock:sock_send_length tracepoint (Linux 6.3+), which the tracepoint paths need")
	switch want {
	case "", "auto":
		if f.Kprobes {
			return PathKprobe, nil
		}
		if !f.SockLengthTracepoints && f.Tracefs != "" {
			return "", errors.New("no kprobes and no sock:sock_send_length tracepoint (Linux 6.3+): no attach path available")
		}
		if f.SkMsgReadsRegs {
			return PathTracepoint, nil
		}
		return PathSyscalls, nil
	case "kprobe":
		if !f.Kprobes {
			return "", errors.New("kprobes requested but this kernel has none (CONFIG_KPROBES off?)")
		}
		return PathKprobe, nil
	case "tracepoint":
		if !f.SockLengthTracepoints && f.Tracefs != "" {
			return "", noSock
		}
		if !f.SkMsgReadsRegs {
			return "", errors.New("the socket tracepoint path needs sk_msg programs that read registers (bpf_task_pt_regs), which this kernel refuses: use probes syscalls")
		}
		return PathTracepoint, nil
	case "syscalls":
		if !f.SockLengthTracepoints && f.Tracefs != "" {
			return "", noSock
		}
		return PathSyscalls, nil
	}
	return "", fmt.Errorf("unknown probes %q (want auto, kprobe, tracepoint or syscalls)", want)
}

// Tracepoints reports whether the path attaches through tracefs events.
func (p Path) Tracepoints() bool { return p == PathTracepoint || p == PathSyscalls }
