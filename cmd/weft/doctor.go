package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/weftdev/weft/pkg/jvmattach"
	"github.com/weftdev/weft/pkg/kernel"
	"github.com/weftdev/weft/pkg/tracer"
)

func doctorCmd(args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	pids := fs.String("pid", "", "also say how these processes' requests are followed (comma-separated pids)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("doctor takes no arguments, only --pid")
	}
	err := doctor(os.Stdout, os.Geteuid() == 0)
	if *pids != "" {
		err = errors.Join(err, doctorPIDs(os.Stdout, *pids))
	}
	return err
}

// doctorPIDs says, per process, how weft would tell which request its
// client calls work for: what `weft run` decides when it starts tracing it.
func doctorPIDs(w io.Writer, list string) error {
	var errs []error
	for _, f := range strings.Split(list, ",") {
		pid, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || pid <= 0 {
			errs = append(errs, fmt.Errorf("--pid: %q is not a process id", f))
			continue
		}
		exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if err != nil {
			errs = append(errs, fmt.Errorf("process %d: %w", pid, err))
			continue
		}
		c, _ := tracer.Classify(pid)
		fmt.Fprintf(w, "process %d (%s): correlation %s — %s%s\n", pid, exe, c.Mode, c.Reason, runtimeNote(pid, exe, c.Mode))
	}
	return errors.Join(errs...)
}

// runtimeNote says what correlation by thread means for runtimes that
// serve many requests on one thread, how Node.js gets its parents, and
// when a Go program's goroutine creation is followed.
func runtimeNote(pid int, exe string, m tracer.Mode) string {
	if m == tracer.ModeGo {
		return "; its goroutines' creation is followed from its first outgoing connection (at once while profiling, for a gRPC-Go server, and for a program that holds a connection it made before weft started: weft logs \"goroutine creation followed\")"
	}
	if m == tracer.ModeNode {
		return "; its calls get parents once weft's companion is loaded (NODE_OPTIONS=\"--require <weft node script --out …>\", weft node attach PID, or weft run --node-agent=attach)"
	}
	if m != tracer.ModeThread {
		return ""
	}
	base := filepath.Base(exe)
	switch {
	case strings.HasPrefix(base, "python"):
		return "; an asyncio server's calls get parents with weft's companion (PYTHONPATH=<weft python path --out DIR>), else none while a thread serves two requests at once"
	case base == "nginx":
		return "; an event loop: its upstream calls go under the request they proxy (an HTTP/2 stream's when its traceparent, a client weft does not trace on this host, or one it traces over TLS, lets the kernel decide its span), other calls get no parent while a thread serves two requests at once (fail-closed)"
	case isHotSpot(pid):
		return "; a JVM: coroutines, executors and virtual threads keep their parents with the Java agent (--java-agent=attach)"
	}
	return ""
}

// pathHooks says what each attach path hooks, and what it costs the host.
var pathHooks = map[kernel.Path]string{
	kernel.PathKprobe:     "kprobes on tcp_sendmsg/tcp_recvmsg",
	kernel.PathTracepoint: "socket calls only: tp_btf sock_send_length/sock_recv_length, no syscall tracepoint",
	kernel.PathSyscalls:   "syscall tracepoints: every process on the host takes the slow syscall path",
}

// doctor prints what the kernel offers and which path weft would take,
// and loads both program sets through the verifier when it can.
func doctor(w io.Writer, root bool) error {
	if root {
		// Tracepoints need tracefs; mounting it is what `weft run` does too.
		if _, err := kernel.EnsureTracefs(); err != nil {
			fmt.Fprintf(w, "warning: %v\n", err)
		}
		if _, err := kernel.EnsureSecurityfs(); err != nil {
			fmt.Fprintf(w, "warning: %v\n", err)
		}
	}
	f := kernel.Probe()
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "NO"
	}
	orNone := func(s string) string {
		if s == "" {
			return "not mounted"
		}
		return s
	}
	fmt.Fprintf(w, "kernel            %s\n", f.Release)
	fmt.Fprintf(w, "BTF (CO-RE)       %s\n", yes(f.BTF))
	fmt.Fprintf(w, "kprobes           %s\n", yes(f.Kprobes))
	fmt.Fprintf(w, "sock tracepoints  %s (sock:sock_send_length, Linux 6.3+)\n", yes(f.SockLengthTracepoints))
	fmt.Fprintf(w, "sk_msg registers  %s (bpf_task_pt_regs in sk_msg: injection without a syscall tracepoint)\n", yes(f.SkMsgReadsRegs))
	fmt.Fprintf(w, "lockdown          %s\n", f.Lockdown)
	fmt.Fprintf(w, "tracefs           %s\n", orNone(f.Tracefs))
	fmt.Fprintf(w, "cgroup v2         %s\n", orNone(f.CgroupV2))
	fmt.Fprintf(w, "bpffs             %s\n", orNone(f.Bpffs))

	var problems []error
	if !f.BTF {
		problems = append(problems, errors.New("no BTF at /sys/kernel/btf/vmlinux: weft's CO-RE programs cannot load (needs CONFIG_DEBUG_INFO_BTF=y)"))
	}
	if root {
		if err := kernel.CheckBPFFloor(); err != nil {
			fmt.Fprintf(w, "BPF floor         MISSING: %v\n", err)
			problems = append(problems, err)
		} else {
			fmt.Fprintln(w, "BPF floor         yes (ring buffer, task BTF and registers, bpf_loop: Linux 5.17+ or backports)")
		}
	}
	path, err := f.ChoosePath("auto")
	if err != nil {
		problems = append(problems, err)
	} else {
		fmt.Fprintf(w, "attach path       %s (%s)\n", path, pathHooks[path])
	}
	switch {
	case f.CgroupV2 == "":
		fmt.Fprintln(w, "injection         NOT possible: no cgroup v2 mount for sockops (traces stop at each service)")
	case tracer.SockopsKnowsProcess():
		fmt.Fprintf(w, "injection         possible: sockops on %s picks traced processes' connections, sk_msg writes traceparent\n", f.CgroupV2)
	default:
		fmt.Fprintf(w, "injection         possible: sockops on %s takes every client connection (this kernel's sockops cannot tell the process), sk_msg writes traceparent only for traced processes\n", f.CgroupV2)
	}
	if root && f.BTF {
		for _, p := range kernel.Paths {
			coll, err := tracer.Load(tracer.Options{Path: p, CaptureBytes: 256, SelfPID: uint32(os.Getpid()), Propagation: true, RuntimeHooks: true, IoctlPackets: true, TLS: true})
			if err != nil {
				fmt.Fprintf(w, "verifier %-10s FAILED: %v\n", p, err)
				if p == path {
					problems = append(problems, fmt.Errorf("the %s programs do not load", p))
				}
				continue
			}
			coll.Close()
			fmt.Fprintf(w, "verifier %-10s ok\n", p)
		}
	} else if !root {
		fmt.Fprintln(w, "verifier          not checked (run as root)")
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintf(w, "problem: %v\n", p)
		}
		return errors.Join(problems...)
	}
	fmt.Fprintln(w, "weft can run here.")
	return nil
}

func isHotSpot(pid int) bool {
	ok, _ := jvmattach.IsHotSpot(pid)
	return ok
}
